"""Drive the official MCP conformance harness (``@modelcontextprotocol/conformance``).

Why this exists: the harness is an npm package with its own CLI and console output. Tests need
a stable, typed answer ("which scenarios passed, which check failed and why"), computed from
the ``checks.json`` files the harness writes with ``-o DIR`` rather than from exit codes, so
that warnings, skipped and not-scored scenarios are told apart the same way every time.

* The harness is installed per version with plain ``npm install --prefix <cache>/<version>``
  (cache: ``$MCP_CONFORMANCE_CACHE`` or ``~/.cache/mcp-conformance``), once, under a file lock.
* On Node < 22 it runs with our import hook (``node20/register.mjs``): the package imports
  ``fs.globSync``, which Node 20 lacks.
* Verdicts per scenario: any FAILURE check -> failed; no SUCCESS check (only warnings or
  skips) -> skipped; listed by the harness under "Not scored for <rev>" (extension, pending,
  added-after-release scenarios of a ``--requirements`` run) -> not scored, left out of counts.

By hand::

    python tests/conformance/harness.py server http://127.0.0.1:3001/mcp --requirements 2026-07-28
    python tests/conformance/harness.py client "python my_client.py" --scenario tools_call
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

try:
    import fcntl
except ImportError:  # Windows: installs are not serialized there
    fcntl = None  # type: ignore[assignment]

PACKAGE = "@modelcontextprotocol/conformance"
DEFAULT_VERSION = "0.2.0-alpha.12"
STABLE_VERSION = "0.1.16"
HOOK = Path(__file__).resolve().parent / "node20" / "register.mjs"

Verdict = Literal["passed", "failed", "skipped", "not-scored"]
_TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SUMMARY_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?\s*$")
_NOT_SCORED_ITEM = re.compile(r"^\s+[✓✗] (\S+) \(([^)]+)\)\s*$")


class HarnessError(RuntimeError):
    """The harness could not be installed or run (as opposed to a scenario failing)."""


# --- results ---


@dataclass(frozen=True)
class CheckFailure:
    """One failing (or warning) check: its id and the harness's message."""

    id: str
    message: str


@dataclass
class ScenarioResult:
    """The verdict for one scenario plus the check counts behind it."""

    name: str
    verdict: Verdict
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    skipped: int = 0
    failures: list[CheckFailure] = field(default_factory=list)
    warning_checks: list[CheckFailure] = field(default_factory=list)
    not_scored_reason: str | None = None


@dataclass
class SuiteResult:
    """All scenario verdicts of one harness run (or of a series of single-scenario runs)."""

    label: str
    output_dir: Path
    scenarios: dict[str, ScenarioResult]

    def _count(self, *verdicts: Verdict) -> int:
        return sum(1 for s in self.scenarios.values() if s.verdict in verdicts)

    @property
    def passed(self) -> int:
        return self._count("passed")

    @property
    def failed(self) -> int:
        return self._count("failed")

    @property
    def skipped(self) -> int:
        return self._count("skipped")

    @property
    def not_scored(self) -> int:
        return self._count("not-scored")

    def verdict(self, scenario: str) -> Verdict | None:
        found = self.scenarios.get(scenario)
        return found.verdict if found else None

    def summary(self) -> str:
        """One line per scenario (failing checks indented), ending in "N passed, M failed"."""
        tags = {"passed": "PASS ", "failed": "FAIL ", "skipped": "SKIP ", "not-scored": "INFO "}
        width = min(48, max((len(n) for n in self.scenarios), default=0))
        lines = []
        for s in self.scenarios.values():
            extra = f"{s.passed}/{s.passed + s.failed} checks"
            if s.warnings:
                extra += f", {s.warnings} warning{'s' if s.warnings > 1 else ''}"
            if s.skipped:
                extra += f", {s.skipped} skipped"
            if s.not_scored_reason:
                extra += f"  [not scored: {s.not_scored_reason}]"
            lines.append(f"{tags[s.verdict]} {s.name.ljust(width)}  {extra}")
            if s.verdict == "failed":
                lines += [f"        ✗ {c.id}: {_short(c.message)}" for c in s.failures]
            elif s.verdict == "skipped":
                lines += [f"        ! {c.id}: {_short(c.message)}" for c in s.warning_checks]
        totals = [sum(getattr(s, k) for s in self.scenarios.values()) for k in ("passed", "failed")]
        warned = sum(s.warnings for s in self.scenarios.values())
        lines += ["", self.label]
        lines.append(f"Checks: {totals[0]} passed, {totals[1]} failed, {warned} warnings")
        if self.not_scored:
            lines.append(f"Not scored at this revision: {self.not_scored} scenario(s) (INFO)")
        last = f"{self.passed} passed, {self.failed} failed"
        lines.append(last + (f", {self.skipped} skipped" if self.skipped else ""))
        return "\n".join(lines)


def _short(text: str, limit: int = 220) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_log(log: str) -> tuple[dict[str, tuple[int, int, int]], dict[str, str]]:
    """Per-scenario "✓|✗ name: P passed, F failed" lines and the "Not scored for" block."""
    summaries: dict[str, tuple[int, int, int]] = {}
    not_scored: dict[str, str] = {}
    in_block = False
    for line in _ANSI.sub("", log).splitlines():
        if m := _SUMMARY_LINE.match(line):
            summaries[m[2]] = (int(m[3]), int(m[4]), int(m[5] or 0))
        elif line.startswith("Not scored for "):
            in_block = True
        elif in_block and (m := _NOT_SCORED_ITEM.match(line)):
            not_scored[m[1]] = m[2]
        elif in_block and (not line.strip() or not line[0].isspace()):
            in_block = False
    return summaries, not_scored


def _read_checks(results: Path, mode: str) -> dict[str, list[dict[str, Any]]]:
    """checks.json per scenario; the name is the dir path minus timestamp (and "server-")."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(results.rglob("checks.json")) if results.is_dir() else []:
        name = _TIMESTAMP.sub("", path.parent.relative_to(results).as_posix())
        if mode == "server":
            name = name.removeprefix("server-")
        try:
            checks = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            checks = [{"id": "checks-json", "status": "FAILURE", "errorMessage": str(exc)}]
        found.setdefault(name, []).extend(checks if isinstance(checks, list) else [])
    return found


def collect(
    results: Path,
    log: str,
    *,
    mode: str,
    label: str,
    expected: Sequence[str] = (),
    notes: dict[str, list[str]] | None = None,
) -> SuiteResult:
    """Turn a results dir (+ harness console output) into verdicts, as summarize.mjs does.

    *expected* scenarios without any result count as failed; *notes* force failures (client
    timed out or exited non-zero in a single-scenario run).
    """
    summaries, not_scored = _parse_log(log)
    checks = _read_checks(results, mode)
    notes = notes or {}
    names = list(dict.fromkeys([*expected, *summaries, *checks, *notes]))
    scenarios: dict[str, ScenarioResult] = {}
    for name in names:
        s = ScenarioResult(name, "passed")
        if name in checks:
            for c in checks[name]:
                status = c.get("status")
                item = CheckFailure(
                    str(c.get("id")), c.get("errorMessage") or c.get("description") or ""
                )
                if status == "SUCCESS":
                    s.passed += 1
                elif status == "FAILURE":
                    s.failed += 1
                    s.failures.append(item)
                elif status == "WARNING":
                    s.warnings += 1
                    s.warning_checks.append(item)
                elif status == "SKIPPED":
                    s.skipped += 1
        elif name in summaries:
            s.passed, s.failed, s.warnings = summaries[name]
            if s.failed:
                s.failures.append(CheckFailure(name, "failed before writing checks.json (see log)"))
        else:
            s.failed = 1
            s.failures.append(CheckFailure(name, "no results: did not run or crashed (see log)"))
        s.failures += [CheckFailure("client-process", why) for why in notes.get(name, [])]
        s.verdict = "failed" if s.failures else "skipped" if s.passed == 0 else "passed"
        if name in not_scored:
            s.verdict, s.not_scored_reason = "not-scored", not_scored[name]
        scenarios[name] = s
    return SuiteResult(label, results.parent, scenarios)


# --- installing and running the harness ---


def cache_root() -> Path:
    env = os.environ.get("MCP_CONFORMANCE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mcp-conformance"


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "w") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def ensure_harness(version: str = DEFAULT_VERSION) -> Path:
    """Install the harness *version* if needed; return its CLI entry (dist/index.js)."""
    target = cache_root() / version
    entry = target / "node_modules" / PACKAGE / "dist" / "index.js"
    if entry.is_file():
        return entry
    npm = shutil.which("npm")
    if npm is None:
        raise HarnessError("npm not found (needed to install the conformance harness)")
    target.mkdir(parents=True, exist_ok=True)
    with _locked(target / ".install.lock"):
        if entry.is_file():  # another process installed it while we waited
            return entry
        manifest = target / "package.json"
        if not manifest.exists():
            manifest.write_text('{"name": "mcp-conformance-cache", "private": true}\n')
        cmd = [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund"]
        cmd += ["--loglevel=error", f"{PACKAGE}@{version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0 or not entry.is_file():
            tail = (proc.stdout + proc.stderr)[-2000:]
            raise HarnessError(f"npm install {PACKAGE}@{version} failed:\n{tail}")
    return entry


def node_version() -> tuple[int, int]:
    """(major, minor) of the `node` on PATH; HarnessError when there is none."""
    node = shutil.which("node")
    if node is None:
        raise HarnessError("node not found (Node >= 20.6 is needed for the conformance harness)")
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    major, minor = out.strip().lstrip("v").split(".")[:2]
    return int(major), int(minor)


def node_command(entry: Path) -> list[str]:
    """The command line running the harness CLI, with our fs.globSync hook on Node < 22."""
    major, minor = node_version()
    if (major, minor) < (20, 6):
        raise HarnessError(f"Node {major}.{minor} is too old: need >= 20.6 (module.register)")
    cmd = ["node"]
    if major < 22:
        cmd += ["--import", HOOK.as_uri()]
    return [*cmd, str(entry)]


def _run(cmd: list[str], log_path: Path, timeout: float) -> tuple[int | None, str]:
    """Run *cmd* in its own process group, output to *log_path*; None rc means timed out."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    return rc, log_path.read_text(encoding="utf-8", errors="replace")


def _http_alive(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=3).close()
    except urllib.error.HTTPError:
        return True  # any status (400/405/406) means something is serving there
    except (urllib.error.URLError, OSError):
        return False
    return True


def _out_dir(output_dir: Path | str | None, kind: str) -> Path:
    if output_dir is None:
        return Path(tempfile.mkdtemp(prefix=f"mcp-conformance-{kind}."))
    path = Path(output_dir).resolve()
    if (path / "results").exists() and any((path / "results").iterdir()):
        # Old checks.json files would be merged into this run's verdicts.
        raise HarnessError(f"{path / 'results'} is not empty; pick a fresh output directory")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _installed_version(entry: Path) -> str:
    manifest = json.loads((entry.parent.parent / "package.json").read_text(encoding="utf-8"))
    return str(manifest["version"])


def run_server_suite(
    url: str,
    *,
    requirements: str | None = None,
    scenario: str | None = None,
    suite: str | None = None,
    spec_version: str | None = None,
    version: str = DEFAULT_VERSION,
    timeout: float = 900,
    output_dir: Path | str | None = None,
) -> SuiteResult:
    """Run server scenarios against the Streamable HTTP endpoint *url* (server already up).

    Exactly one selection is used: *scenario*, else *requirements* (a spec revision's frozen
    set, 0.2.x only), else *suite* (harness default "active") with optional *spec_version*.
    *timeout* caps the whole run in seconds; a capped run reports what finished.
    """
    entry = ensure_harness(version)
    if not _http_alive(url):
        raise HarnessError(f"nothing answers at {url}")
    out = _out_dir(output_dir, "server")
    args = ["server", "--url", url, "-o", str(out / "results")]
    if scenario:
        args += ["--scenario", scenario]
        selection = f"scenario={scenario}"
    elif requirements:
        args += ["--requirements", requirements]
        selection = f"requirements={requirements}"
    else:
        args += ["--suite", suite] if suite else []
        selection = f"suite={suite or 'active'}"
    if spec_version and not requirements:
        args += ["--spec-version", spec_version]
        selection += f" spec-version={spec_version}"
    rc, log = _run([*node_command(entry), *args], out / "harness.log", timeout)
    label = f"Harness: {PACKAGE}@{_installed_version(entry)} server {selection}; url={url}"
    label += f"; results: {out}" + ("" if rc is not None else f" (run capped at {timeout}s)")
    return collect(
        out / "results", log, mode="server", label=label, expected=[scenario] if scenario else ()
    )


def list_client_scenarios(
    *, requirements: str | None = None, spec_version: str | None = None, version: str
) -> list[str]:
    """Client scenario names from the harness's `list` command (a requirement set or all)."""
    entry = ensure_harness(version)
    args = ["list", "--requirements", requirements] if requirements else ["list", "--client"]
    if spec_version and not requirements:
        args += ["--spec-version", spec_version]
    proc = subprocess.run(
        [*node_command(entry), *args], capture_output=True, text=True, timeout=120, check=False
    )
    names, in_section = [], False
    for line in _ANSI.sub("", proc.stdout).splitlines():
        if line.startswith("Client scenarios"):
            in_section = True
        elif line and not line[0].isspace():
            in_section = False
        elif in_section and line.startswith("  - "):
            names.append(line[4:].split()[0])
    if not names:
        raise HarnessError(f"could not list client scenarios:\n{proc.stdout}{proc.stderr}")
    return names


def run_client_suite(
    command: str,
    *,
    requirements: str | None = None,
    scenario: str | None = None,
    spec_version: str | None = None,
    version: str = DEFAULT_VERSION,
    timeout_ms: int = 60000,
    output_dir: Path | str | None = None,
) -> SuiteResult:
    """Run client scenarios one at a time: ``<command> <mock-server-url>`` per scenario.

    One at a time (not the harness's parallel suite mode) because timing-sensitive scenarios
    such as sse-retry flake when dozens of clients start at once on a small machine. As in the
    harness's own single-scenario mode, a client that times out or exits non-zero fails its
    scenario.
    """
    entry = ensure_harness(version)
    out = _out_dir(output_dir, "client")
    (out / "logs").mkdir(exist_ok=True)
    if scenario:
        names, selection = [scenario], f"scenario={scenario}"
    else:
        names = list_client_scenarios(
            requirements=requirements, spec_version=spec_version, version=version
        )
        selection = f"requirements={requirements}" if requirements else "all"
    wire = requirements or spec_version
    is_next = not _installed_version(entry).startswith("0.1.")
    notes: dict[str, list[str]] = {}
    logs = []
    for name in names:
        args = ["client", "--command", command, "--scenario", name]
        args += ["--timeout", str(timeout_ms), "-o", str(out / "results")]
        if wire and is_next:
            args += ["--spec-version", wire]
        log_path = out / "logs" / (name.replace("/", "_") + ".log")
        cap = timeout_ms / 1000 + 90
        rc, log = _run([*node_command(entry), *args], log_path, cap)
        plain = _ANSI.sub("", log)
        if "CLIENT TIMED OUT" in plain:
            notes.setdefault(name, []).append(f"client timed out after {timeout_ms}ms")
        elif m := re.search(r"CLIENT EXITED WITH ERROR \(code -?\d+\)", plain):
            notes.setdefault(name, []).append(m[0].lower())
        if rc is None:
            notes.setdefault(name, []).append(f"harness run exceeded {cap:.0f}s")
        logs.append(log)
    label = f"Harness: {PACKAGE}@{_installed_version(entry)} client {selection}, one at a time;"
    label += f" command: {command}; results: {out}"
    return collect(
        out / "results", "\n".join(logs), mode="client", label=label, expected=names, notes=notes
    )


# --- command line ---


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    server = sub.add_parser("server", help="test a running server at URL")
    server.add_argument("url")
    server.add_argument("--suite")
    server.add_argument("--spec-version")
    server.add_argument("--timeout", type=float, default=900, help="whole-run cap, seconds")
    client = sub.add_parser("client", help='test a client command ("python client.py")')
    client.add_argument("command")
    client.add_argument("--spec-version")
    client.add_argument("--timeout", type=int, default=60000, help="per client process, ms")
    for p in (server, client):
        p.add_argument("--requirements", help="spec revision, e.g. 2026-07-28")
        p.add_argument("--scenario")
        p.add_argument("--version", default=DEFAULT_VERSION, help="harness version")
        p.add_argument("--out", help="keep results here (default: a new temp dir)")
    ns = parser.parse_args(argv)
    try:
        if ns.mode == "server":
            result = run_server_suite(
                ns.url,
                requirements=ns.requirements,
                scenario=ns.scenario,
                suite=ns.suite,
                spec_version=ns.spec_version,
                version=ns.version,
                timeout=ns.timeout,
                output_dir=ns.out,
            )
        else:
            result = run_client_suite(
                ns.command,
                requirements=ns.requirements,
                scenario=ns.scenario,
                spec_version=ns.spec_version,
                version=ns.version,
                timeout_ms=ns.timeout,
                output_dir=ns.out,
            )
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
