"""One command that measures mcpkit against the official SDK, FastMCP and the bare floor.

    python -m bench                      # full run (peers from ~/.cache/mcpkit-bench/peers)
    python -m bench --install-peers      # create that virtualenv first (pinned versions)
    python -m bench --quick              # CI smoke: a few seconds, mcpkit and the floor only

Every measure runs the contenders alternately (round-robin, ``--rounds`` times) and keeps
the median, servers on one core and the load generator (wrk, or this process for stdio) on
the other.  The table shows mcpkit's figures divided by each other contender's; only these
ratios mean anything, absolute numbers depend on the machine and its neighbours.  See
bench/README.md for what each measure is.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PEERS_DIR = HERE / "peers"
LUA = HERE / "mcp.lua"
DEFAULT_PEERS_VENV = Path.home() / ".cache" / "mcpkit-bench" / "peers"
#: What ``--install-peers`` installs.  uvicorn[standard] gives the peers the same server
#: stack (uvloop + httptools) as mcpkit and the floor.
PEER_PINS = ("mcp==2.3.0", "fastmcp==4.2.3", "uvicorn[standard]==0.54.0", "mangum==0.22.0")

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}

OURS, SDK, FASTMCP, FLOOR = "mcpkit", "sdk", "fastmcp", "floor"
ALL = (OURS, SDK, FASTMCP, FLOOR)
SECTIONS = ("http", "stdio", "inproc", "import", "rss", "gateway", "coldstart")
#: Sections run only when named in ``--only`` (bench/variants.py and bench/middleware.py:
#: mcpkit against itself).
EXTRA_SECTIONS = ("variants", "middleware", "scale")
#: The gateway's CPU per forwarded call over its upstream's (issue #20: at most 1.5).
GATEWAY_CPU = "gateway CPU / upstream's CPU per forwarded tools/call, c=16"


# ---------------------------------------------------------------------------- settings


@dataclass
class Settings:
    quick: bool
    duration: float
    warmup: float
    rounds: int
    concurrency: tuple[int, ...]
    stdio_calls: int
    stdio_window: int
    client_calls: int
    cold_starts: int
    inproc_calls: int
    import_runs: int
    rss_calls: tuple[int, int]
    server_cpu: int | None
    client_cpu: int | None
    sections: tuple[str, ...]


def _two_ints(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    first, second = (int(x) for x in text.split(","))
    return first, second


def make_settings(args: argparse.Namespace) -> Settings:
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, client_cpu = (cpus[-1], cpus[0]) if len(cpus) >= 2 else (None, None)
    if args.no_pin:  # what users get: the scheduler places the processes
        server_cpu = client_cpu = None
    quick = args.quick
    sections = tuple(args.only.split(",")) if args.only else SECTIONS
    return Settings(
        quick=quick,
        duration=args.duration or (1.0 if quick else 3.0),
        warmup=0.0 if quick else 1.0,
        rounds=args.rounds or (1 if quick else 2),
        concurrency=(16,) if quick else (1, 16, 64),
        stdio_calls=200 if quick else 3000,
        stdio_window=32,
        client_calls=200 if quick else 2000,
        cold_starts=1 if quick else 5,
        inproc_calls=2000 if quick else 20000,
        import_runs=2 if quick else 7,
        rss_calls=_two_ints(args.rss_calls) or ((1000, 5000) if quick else (10_000, 100_000)),
        server_cpu=server_cpu,
        client_cpu=client_cpu,
        sections=sections,
    )


# ---------------------------------------------------------------------------- contenders


@dataclass
class Contender:
    name: str
    python: str
    available: bool = True
    why_not: str = ""
    versions: dict[str, str] = field(default_factory=dict)

    def http_cmd(self, mode: str, port: int) -> list[str]:
        if self.name == OURS:
            script = str(PEERS_DIR / "mcpkit_server.py")
            return [self.python, "-m", "mcpkit", "serve", script, "--http", "--port", str(port)]
        if self.name == FLOOR:
            return [self.python, str(PEERS_DIR / "floor_asgi.py"), str(port)]
        flags = {"modern-json": ["--stateless", "--json"], "modern-sse": ["--stateless"]}
        extra = flags.get(mode, ["--json"])  # legacy: stateful sessions, JSON answers
        return [self.python, str(self._script()), "http", str(port), *extra]

    def stdio_cmd(self) -> list[str]:
        if self.name == OURS:
            return [self.python, "-m", "mcpkit", "serve", str(PEERS_DIR / "mcpkit_server.py")]
        if self.name == FLOOR:
            return [self.python, str(PEERS_DIR / "floor_stdio.py")]
        return [self.python, str(self._script()), "stdio"]

    def inproc_cmd(self, n: int) -> list[str] | None:
        if self.name == FLOOR:
            return None
        script = PEERS_DIR / "mcpkit_server.py" if self.name == OURS else self._script()
        return [self.python, str(script), "inproc", str(n)]

    def import_stmt(self, api: str) -> str | None:
        table = {
            OURS: {
                "server": "from mcpkit import Server",
                "client": "from mcpkit.client import Client",
            },
            SDK: {
                "server": "from mcp.server.mcpserver import MCPServer",
                "client": "from mcp import Client",
            },
            FASTMCP: {
                "server": "from fastmcp import FastMCP",
                "client": "from fastmcp import Client",
            },
        }
        return table.get(self.name, {}).get(api)

    def _script(self) -> Path:
        return PEERS_DIR / f"{self.name}_server.py"


def _versions(python: str, dists: tuple[str, ...]) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {'python': sys.version.split()[0]}\n"
        f"for d in {dists!r}:\n"
        "    try: out[d] = m.version(d)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))"
    )
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        return dict(json.loads(done.stdout))
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}


def contenders(args: argparse.Namespace, settings: Settings) -> dict[str, Contender]:
    stack = ("uvicorn", "uvloop", "httptools", "anyio", "pydantic", "orjson")
    ours = Contender(OURS, sys.executable)
    ours.versions = _versions(sys.executable, ("mcpkit", *stack))
    floor = Contender(FLOOR, sys.executable)
    floor.versions = {k: v for k, v in ours.versions.items() if k != "mcpkit"}
    out = {OURS: ours}
    peers_python = Path(args.peers_venv) / "bin" / "python"
    for name, dist in ((SDK, "mcp"), (FASTMCP, "fastmcp")):
        peer = Contender(name, str(peers_python))
        if settings.quick:
            peer.available, peer.why_not = False, "skipped (--quick)"
        elif not peers_python.exists():
            peer.available = False
            peer.why_not = f"skipped (no peers venv at {args.peers_venv}: run --install-peers)"
        else:
            peer.versions = _versions(str(peers_python), (dist, *stack))
            if dist not in peer.versions:
                peer.available, peer.why_not = False, f"skipped ({dist} not installed)"
        out[name] = peer
    out[FLOOR] = floor
    return out


def install_peers(venv: Path) -> int:
    print(f"installing {' '.join(PEER_PINS)} into {venv}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *PEER_PINS], check=True)
    print(json.dumps(_versions(str(venv / "bin" / "python"), ("mcp", "fastmcp", "uvicorn"))))
    return 0


# ---------------------------------------------------------------------------- processes


def _pin(cpu: int | None) -> Callable[[], None] | None:
    if cpu is None:
        return None

    def preexec() -> None:
        os.sched_setaffinity(0, {cpu})

    return preexec


class Proc:
    """A child process in its own process group, stopped by its id."""

    def __init__(self, cmd: list[str], cpu: int | None, cwd: str, **kw: Any) -> None:
        self.cmd = cmd
        self.popen = subprocess.Popen(
            cmd, cwd=cwd, preexec_fn=_pin(cpu), start_new_session=True, **kw
        )
        self.pid = self.popen.pid

    def rss_kb(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) in KiB."""
        rss = hwm = 0
        with contextlib.suppress(OSError), open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        return rss, hwm

    def cpu_s(self) -> float:
        """User + system CPU seconds the process (all its threads) used so far."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # (the name may hold spaces)
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, 15)
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, 9)
                self.popen.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------- HTTP


def post(
    port: int, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        all_headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        }
        conn.request("POST", "/mcp", json.dumps(body), all_headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    out = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        out["Mcp-Name"] = name
    return out


def wait_http(port: int, proc: Proc, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    body = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": META}}
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise RuntimeError(f"server exited early: {' '.join(proc.cmd)}")
        try:
            post(port, body, modern_headers("tools/list"))
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not answer on port {port}")


def legacy_session(port: int) -> str:
    """initialize + notifications/initialized; returns the Mcp-Session-Id."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    status, headers, body = post(port, init, {"MCP-Protocol-Version": LEGACY})
    sid = headers.get("mcp-session-id")
    if status != 200 or not sid:
        raise RuntimeError(f"initialize failed: {status} {body[:200]!r}")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    post(port, note, {"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": sid})
    return sid


def probe_content_type(port: int, mode: str, session: str) -> str:
    """What kind of answer the contender gives to the measured tools/call."""
    tool = "progress_echo" if mode == "modern-sse" else "echo"
    params: dict[str, Any] = {"name": tool, "arguments": {"text": "hello world"}}
    if mode == "legacy":
        headers = {"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": session}
    else:
        params["_meta"] = dict(META, progressToken="p") if tool == "progress_echo" else META
        headers = modern_headers("tools/call", tool)
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    status, got, body = post(port, request, headers)
    kind = got.get("content-type", "?").split(";")[0]
    if status != 200 or b"hello world" not in body:
        return f"{kind} (HTTP {status}, unexpected body)"
    return kind


_RESULT = re.compile(r"RESULT (.*)")


def run_wrk(
    port: int, conc: int, duration: float, args: list[str], cpu: int | None
) -> dict[str, float]:
    """One wrk run (whole seconds: wrk runs for its full duration)."""
    cmd = [
        "wrk",
        "-t1",
        f"-c{conc}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        f"http://127.0.0.1:{port}/mcp",
        "--",
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_pin(cpu), timeout=600)
    match = _RESULT.search(done.stdout)
    if match is None:
        raise RuntimeError(f"wrk failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    fields = {k: float(v) for k, v in (kv.split("=") for kv in match.group(1).split())}
    errors = sum(fields[k] for k in fields if k.startswith("err_")) + fields["bad"]
    return {
        "requests": fields["requests"],
        "rps": fields["requests"] / (fields["duration_us"] / 1e6),
        "p50_ms": fields["p50_us"] / 1000,
        "p99_ms": fields["p99_us"] / 1000,
        "errors": errors,
    }


HTTP_MODES = ("modern-json", "modern-sse", "legacy")


def http_cells(mode: str, settings: Settings) -> list[tuple[str, int]]:
    # SSE answers come from progress_echo, a tools/call; --quick keeps to tools/call.
    if mode == "modern-sse" or settings.quick:
        methods: tuple[str, ...] = ("tools/call",)
    else:
        methods = ("tools/call", "tools/list")
    return [(m, c) for m in methods for c in settings.concurrency]


#: The SDK as ``pip install mcp`` runs it (stock uvicorn on asyncio + h11; over stdio its own
#: asyncio loop), measured beside the others in a same-stack run for the cells the issue's
#: targets read (modern JSON ``tools/call``, stdio sequential through the raw driver): the
#: issue's own SDK baseline ("without --fast, what pip install mcp users get"), so that both
#: ratios come from one run.  Its figures go to rows named after the cell's plus
#: :data:`AS_INSTALLED` (see :func:`record_as_installed`).
SDK_AS_INSTALLED = "sdk (as installed)"
AS_INSTALLED = ", against the SDK as `pip install mcp` runs it"
AS_INSTALLED_ENV = "default"  # MCPKIT_BENCH_PEER_STACK for that server (bench/peers/_serve.py)


def measure_as_installed(ctx: Run) -> bool:
    """Whether this run adds the SDK as installed (a same-stack run with the SDK)."""
    same_stack = os.environ.get("MCPKIT_BENCH_PEER_STACK") != AS_INSTALLED_ENV
    return same_stack and SDK in ctx.contenders and ctx.contenders[SDK].available


def as_installed_env() -> dict[str, str]:
    return dict(os.environ, MCPKIT_BENCH_PEER_STACK=AS_INSTALLED_ENV)


def record_as_installed(ctx: Run, measure: str, value: float, errors: float = 0) -> None:
    """The row ``measure + AS_INSTALLED``: mcpkit's and the floor's figures of ``measure``
    (recorded before) with ``value``, the SDK as installed, in the SDK column."""
    base = ctx.rows.get(measure)
    if base is None:
        return
    for name in (OURS, FLOOR):
        if name in base.values:
            ctx.record(
                measure + AS_INSTALLED,
                name,
                base.values[name],
                base.unit,
                base.higher,
                base.errors.get(name, 0),
            )
    ctx.record(measure + AS_INSTALLED, SDK, value, base.unit, base.higher, errors)


def _http_contenders(ctx: Run, mode: str) -> list[tuple[str, Contender, dict[str, str] | None]]:
    """(key, contender, environment) of every server to start for ``mode``."""
    out: list[tuple[str, Contender, dict[str, str] | None]] = [
        (name, ctx.contenders[name], None) for name in ctx.live()
    ]
    if mode == "modern-json" and measure_as_installed(ctx):
        out.append((SDK_AS_INSTALLED, ctx.contenders[SDK], as_installed_env()))
    return out


def bench_http(ctx: Run) -> None:
    if shutil.which("wrk") is None:
        ctx.note("http: skipped (wrk is not installed: apt-get install wrk)")
        return
    s = ctx.settings
    for mode in HTTP_MODES:
        procs: dict[str, tuple[Proc, int, str]] = {}
        try:
            for name, contender, env in _http_contenders(ctx, mode):
                port = free_port()
                proc = Proc(
                    contender.http_cmd(mode, port),
                    s.server_cpu,
                    ctx.workdir,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
                procs[name] = (proc, port, "-")
            for name, (proc, port, _) in list(procs.items()):
                wait_http(port, proc)
                session = legacy_session(port) if mode == "legacy" else "-"
                procs[name] = (proc, port, session)
                kind = probe_content_type(port, mode, session)
                if name != SDK_AS_INSTALLED:
                    ctx.record(f"http {mode} answer", name, kind, "type")
            tool = "progress_echo" if mode == "modern-sse" else "echo"
            era = "legacy" if mode == "legacy" else "modern"
            for _name, (_, port, session) in procs.items():  # warm-up
                if s.warmup:
                    warm = ["tools/call", era, tool, session]
                    run_wrk(port, 16, s.warmup, warm, s.client_cpu)
            for method, conc in http_cells(mode, s):
                cell = {  # the SDK as installed: tools/call only (the targets' measure)
                    n: v
                    for n, v in procs.items()
                    if method == "tools/call" or n != SDK_AS_INSTALLED
                }
                samples: dict[str, list[dict[str, float]]] = {n: [] for n in cell}
                for _ in range(s.rounds):
                    for name, (_, port, session) in cell.items():
                        wrk_args = [method, era, tool, session]
                        got = run_wrk(port, conc, s.duration, wrk_args, s.client_cpu)
                        samples[name].append(got)
                label = f"http {mode} {method} c={conc}"
                mine = {n: runs for n, runs in samples.items() if n != SDK_AS_INSTALLED}
                for name, runs in mine.items():
                    errors = sum(r["errors"] for r in runs)
                    rps = statistics.median(r["rps"] for r in runs)
                    p50 = statistics.median(r["p50_ms"] for r in runs)
                    p99 = statistics.median(r["p99_ms"] for r in runs)
                    ctx.record(
                        f"{label} throughput", name, rps, "calls/s", higher=True, errors=errors
                    )
                    ctx.record(f"{label} p50", name, p50, "ms", higher=False)
                    ctx.record(f"{label} p99", name, p99, "ms", higher=False)
                runs = samples.get(SDK_AS_INSTALLED, [])
                if runs:
                    errors = sum(r["errors"] for r in runs)
                    for key, what in (("rps", "throughput"), ("p50_ms", "p50"), ("p99_ms", "p99")):
                        value = statistics.median(r[key] for r in runs)
                        record_as_installed(ctx, f"{label} {what}", value, errors)
                ctx.progress(label)
            for name, (proc, _, _) in procs.items():
                if name == SDK_AS_INSTALLED:
                    continue
                rss, hwm = proc.rss_kb()
                steady = f"http {mode} RSS steady (after load)"
                ctx.record(steady, name, rss / 1024, "MiB", higher=False)
                ctx.record(f"http {mode} RSS peak", name, hwm / 1024, "MiB", higher=False)
        finally:
            for proc, _, _ in procs.values():
                proc.stop()


def bench_rss(ctx: Run) -> None:
    """RSS of mcpkit's HTTP server after N1 and after N2 modern tools/call (no growth)."""
    if shutil.which("wrk") is None:
        ctx.note("rss: skipped (wrk is not installed)")
        return
    s = ctx.settings
    first, second = s.rss_calls
    port = free_port()
    proc = Proc(
        ctx.contenders[OURS].http_cmd("modern-json", port),
        s.server_cpu,
        ctx.workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_http(port, proc)
        wrk_args = ["tools/call", "modern", "echo", "-"]
        done = 0
        figures = {}
        for target in (first, second):
            while done < target:  # 1-second runs until at least `target` calls were served
                got = run_wrk(port, 16, 1, wrk_args, s.client_cpu)
                done += int(got["requests"])
            figures[target] = proc.rss_kb()[0] / 1024
        ctx.record(f"RSS after {first:,} calls", OURS, figures[first], "MiB", higher=False)
        ctx.record(f"RSS after {second:,} calls", OURS, figures[second], "MiB", higher=False)
        growth = figures[second] / figures[first]
        ctx.record(f"RSS growth {first:,} -> {second:,} calls", OURS, growth, "ratio", higher=False)
        ctx.progress("rss")
    finally:
        proc.stop()


# ---------------------------------------------------------------------------- in-process


def bench_inproc(ctx: Run) -> None:
    s = ctx.settings
    samples: dict[str, list[dict[str, float]]] = {}
    for _ in range(s.rounds):
        for name in ctx.live():
            cmd = ctx.contenders[name].inproc_cmd(s.inproc_calls)
            if cmd is None:
                continue
            done = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                cwd=str(PEERS_DIR),
                preexec_fn=_pin(s.server_cpu),
                timeout=600,
            )
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode != 0 or not lines:
                raise RuntimeError(f"in-process run failed for {name}: {done.stderr[-800:]}")
            samples.setdefault(name, []).append(json.loads(lines[-1]))
    for name, runs in samples.items():
        rps = statistics.median(r["calls_per_s"] for r in runs)
        p50 = statistics.median(r["p50_us"] for r in runs)
        ctx.record("in-process tools/call (no transport)", name, rps, "calls/s", higher=True)
        ctx.record("in-process tools/call p50", name, p50, "µs", higher=False)
    ctx.progress("in-process")


# ---------------------------------------------------------------------------- import time


def import_seconds(python: str, stmt: str, cpu: int | None) -> float | None:
    code = f"import time\nt = time.perf_counter()\n{stmt}\nprint(time.perf_counter() - t)"
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, preexec_fn=_pin(cpu), timeout=120
    )
    if done.returncode != 0:
        return None
    return float(done.stdout.strip().splitlines()[-1])


def bench_import(ctx: Run) -> None:
    s = ctx.settings
    for api in ("server", "client"):
        samples: dict[str, list[float | None]] = {}
        for _ in range(s.import_runs):
            for name in ctx.live():
                stmt = ctx.contenders[name].import_stmt(api)
                if stmt is None:
                    continue
                got = import_seconds(ctx.contenders[name].python, stmt, s.server_cpu)
                samples.setdefault(name, []).append(got)
        for name, runs in samples.items():
            label = f"import of the {api} API"
            if any(r is None for r in runs):
                ctx.record(label, name, "not available (import failed)", "ms", higher=False)
            else:
                ms = statistics.median(r for r in runs if r is not None) * 1000
                ctx.record(label, name, ms, "ms", higher=False)
    ctx.progress("import time")


# ---------------------------------------------------------------------------- gateway


def bench_gateway(ctx: Run) -> None:
    """The gateway's added latency: modern tools/call straight to mcpkit's HTTP server,
    and through ``mcpkit gateway`` in front of that same server (one upstream, no prefix,
    no auth, default policy), alternately, at c=1 and c=16.

    Reports "not available" while ``src/mcpkit/gateway`` does not exist.
    """
    label = "gateway"
    if importlib.util.find_spec("mcpkit.gateway") is None or shutil.which("wrk") is None:
        why = "not available (no mcpkit.gateway yet)" if shutil.which("wrk") else "no wrk"
        ctx.record(f"{label} added p50 latency, c=1", OURS, why, "ms", higher=False)
        return
    s = ctx.settings
    upstream_port, gateway_port = free_port(), free_port()
    config = Path(ctx.workdir) / "gateway.toml"
    config.write_text(
        f'[[upstream]]\nname = "bench"\nurl = "http://127.0.0.1:{upstream_port}/mcp"\n'
    )
    procs = []
    try:
        upstream = Proc(
            ctx.contenders[OURS].http_cmd("modern-json", upstream_port),
            s.server_cpu,
            ctx.workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(upstream)
        wait_http(upstream_port, upstream)
        gateway = Proc(
            [sys.executable, "-m", "mcpkit", "gateway", str(config), "--port", str(gateway_port)],
            s.server_cpu,
            ctx.workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(gateway)
        wait_http(gateway_port, gateway)
        wrk_args = ["tools/call", "modern", "echo", "-"]
        if s.warmup:
            for port in (upstream_port, gateway_port):
                run_wrk(port, 16, s.warmup, wrk_args, s.client_cpu)
        for conc in [c for c in s.concurrency if c in (1, 16)]:
            samples: dict[int, list[dict[str, float]]] = {upstream_port: [], gateway_port: []}
            cpu = [0.0, 0.0, 0.0]  # gateway s, upstream s, calls: over the runs via the gateway
            for _ in range(s.rounds):
                for port in samples:
                    before = (gateway.cpu_s(), upstream.cpu_s())
                    samples[port].append(run_wrk(port, conc, s.duration, wrk_args, s.client_cpu))
                    if port == gateway_port:
                        cpu[0] += gateway.cpu_s() - before[0]
                        cpu[1] += upstream.cpu_s() - before[1]
                        cpu[2] += samples[port][-1]["requests"]
            if conc == 16 and cpu[2]:
                _record_gateway_cpu(ctx, label, conc, *cpu)
            direct = statistics.median(r["p50_ms"] for r in samples[upstream_port])
            via = statistics.median(r["p50_ms"] for r in samples[gateway_port])
            errors = sum(r["errors"] for r in samples[gateway_port])
            ctx.record(
                f"{label} added p50 latency, c={conc}", OURS, via - direct, "ms", errors=errors
            )
            ctx.record(f"{label} direct p50, c={conc}", OURS, direct, "ms")
            rps_direct = statistics.median(r["rps"] for r in samples[upstream_port])
            rps_via = statistics.median(r["rps"] for r in samples[gateway_port])
            ctx.record(
                f"{label} throughput via gateway / direct, c={conc}",
                OURS,
                rps_via / rps_direct,
                "ratio",
            )
        ctx.progress("gateway")
    finally:
        for proc in reversed(procs):
            proc.stop()


def _record_gateway_cpu(
    ctx: Run, label: str, conc: int, gateway_s: float, upstream_s: float, calls: float
) -> None:
    """CPU per forwarded call of the gateway and of its upstream, read from /proc around
    the same runs: their ratio does not depend on the machine's cores or its load."""
    ctx.record(
        f"{label} CPU per forwarded tools/call, c={conc}",
        OURS,
        gateway_s / calls * 1e6,
        "us",
        higher=False,
    )
    ctx.record(
        f"{label} upstream's CPU per call it serves, c={conc}",
        OURS,
        upstream_s / calls * 1e6,
        "us",
        higher=False,
    )
    if upstream_s:
        ctx.record(GATEWAY_CPU, OURS, gateway_s / upstream_s, "ratio", higher=False)


# ---------------------------------------------------------------------------- recording


@dataclass
class Row:
    measure: str
    unit: str
    higher: bool | None
    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, float] = field(default_factory=dict)


class Run:
    def __init__(self, settings: Settings, contenders: dict[str, Contender], workdir: str) -> None:
        self.settings = settings
        self.contenders = contenders
        self.workdir = workdir
        self.rows: dict[str, Row] = {}
        self.notes: list[str] = []
        self.t0 = time.monotonic()
        #: measure -> variant -> median (bench/variants.py), when that section ran.
        self.variants: dict[str, dict[str, float]] = {}

    def live(self) -> list[str]:
        return [n for n, c in self.contenders.items() if c.available]

    def record(
        self,
        measure: str,
        name: str,
        value: Any,
        unit: str,
        higher: bool | None = None,
        errors: float = 0,
    ) -> None:
        row = self.rows.setdefault(measure, Row(measure, unit, higher))
        row.values[name] = value
        if errors:
            row.errors[name] = errors

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"  note: {text}", file=sys.stderr, flush=True)

    def progress(self, what: str) -> None:
        print(f"  [{time.monotonic() - self.t0:6.1f}s] {what}", file=sys.stderr, flush=True)


def ratio(row: Row, other: str) -> float | None:
    ours, theirs = row.values.get(OURS), row.values.get(other)
    if not isinstance(ours, (int, float)) or not isinstance(theirs, (int, float)) or not theirs:
        return None
    return float(ours) / float(theirs)


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def table(run: Run) -> str:
    names = list(ALL)
    header = ["measure", "unit", "better", *names, *(f"{OURS}/{n}" for n in names[1:])]
    lines = []
    for row in run.rows.values():
        better = {True: "higher", False: "lower", None: ""}[row.higher]
        cells = []
        for n in names:
            c = run.contenders[n]
            value = row.values.get(n)
            if value is None and not c.available:
                cells.append("skipped")
            else:
                text = fmt(value)
                if row.errors.get(n):
                    text += f" ({row.errors[n]:.0f} err)"
                cells.append(text)
        ratios = [fmt_ratio(ratio(row, n)) if row.higher is not None else "" for n in names[1:]]
        lines.append([row.measure, row.unit, better, *cells, *ratios])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]

    def render(cols: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i < 3 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cols, widths, strict=False))
        )

    out = [render(header), render(["-" * w for w in widths])]
    out.extend(render(line) for line in lines)
    return "\n".join(out)


STACKS = {
    "same": "uvloop+httptools (HTTP), uvloop (stdio servers, all clients)",
    "default": "asyncio+h11 (HTTP), their own asyncio (stdio), asyncio for all clients",
}

# Targets: (description, measure, versus, comparison, bound, kind).  ISSUE: the issue's
# targets against its own baselines: the SDK as `pip install mcp` runs it (the issue's 830
# calls/s came from ../shared/peers without --fast: asyncio + h11; over stdio the SDK's own
# asyncio loop), one raw client for every stdio server (its stdio figures came from the
# peers' stdio_client.py, a plain subprocess client).  STRICTER: the same bars on harder
# terms, reported beside them: the SDK on mcpkit's own stack (uvloop, httptools), or each
# framework's own client in the loop.
ISSUE, STRICTER = "issue", "stricter"


@dataclass(frozen=True)
class Target:
    """A target the run is read against: ``measure``'s mcpkit figure over ``versus``'s
    (a contender's column) must be ``op`` (``<=`` or ``>=``) ``bound``; ``kind`` says whose
    target it is (the issue's, or a stricter one of ours)."""

    text: str
    measure: str
    versus: str
    op: str
    bound: float
    kind: str


TARGETS: tuple[Target, ...] = (
    Target(
        "Lambda cold start, import to first tools/call: <= 1/5 of the SDK's",
        "Lambda cold start: import to first tools/call answered",
        SDK,
        "<=",
        0.2,
        ISSUE,
    ),
    Target(
        "HTTP modern JSON tools/call c=16: >= 10x the SDK's throughput (the SDK as installed)",
        "http modern-json tools/call c=16 throughput" + AS_INSTALLED,
        SDK,
        ">=",
        10.0,
        ISSUE,
    ),
    Target(
        "HTTP modern JSON tools/call c=16: >= 50% of the bare ASGI floor on the same stack",
        "http modern-json tools/call c=16 throughput",
        FLOOR,
        ">=",
        0.5,
        ISSUE,
    ),
    Target(
        "HTTP modern JSON tools/call c=64: p99 <= 1/10 of the SDK's (the SDK as installed)",
        "http modern-json tools/call c=64 p99" + AS_INSTALLED,
        SDK,
        "<=",
        0.1,
        ISSUE,
    ),
    Target(
        "stdio: >= 20x the SDK's sequential calls/s (one raw client; the SDK as installed)",
        "stdio tools/call sequential (legacy session)" + AS_INSTALLED,
        SDK,
        ">=",
        20.0,
        ISSUE,
    ),
    Target(
        "stdio on one core: >= 20x the SDK's sequential calls/s (one raw client; the SDK as "
        "installed)",
        "stdio tools/call sequential, one core (legacy session)" + AS_INSTALLED,
        SDK,
        ">=",
        20.0,
        ISSUE,
    ),
    Target(
        "in-process dispatch: >= 15x the SDK's",
        "in-process tools/call (no transport)",
        SDK,
        ">=",
        15.0,
        ISSUE,
    ),
    Target(
        "import of the server API <= 1/5 of the SDK's",
        "import of the server API",
        SDK,
        "<=",
        0.2,
        ISSUE,
    ),
    Target(
        "import of the client API <= 1/5 of the SDK's",
        "import of the client API",
        SDK,
        "<=",
        0.2,
        ISSUE,
    ),
    Target(
        "HTTP modern JSON tools/call c=16: >= 10x the SDK on mcpkit's server stack",
        "http modern-json tools/call c=16 throughput",
        SDK,
        ">=",
        10.0,
        STRICTER,
    ),
    Target(
        "HTTP modern JSON tools/call c=64: p99 <= 1/10 of the SDK's on mcpkit's server stack",
        "http modern-json tools/call c=64 p99",
        SDK,
        "<=",
        0.1,
        STRICTER,
    ),
    Target(
        "stdio: >= 20x the SDK's sequential calls/s, one raw client, the SDK on uvloop",
        "stdio tools/call sequential (legacy session)",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
    Target(
        "stdio on one core: >= 20x the SDK's sequential calls/s, one raw client, the SDK on uvloop",
        "stdio tools/call sequential, one core (legacy session)",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
    Target(
        "stdio: >= 20x the SDK's sequential calls/s, each framework's own client",
        "stdio tools/call sequential, each framework's own client",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
    Target(
        "stdio on one core: >= 20x the SDK's sequential calls/s, each framework's own client",
        "stdio tools/call sequential, one core, each framework's own client",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
)


def _verdict(row: Row, versus: str, op: str, bound: float) -> tuple[float | None, str]:
    """(ratio, verdict).  "floor-bound": not met, and the bare floor itself does not reach
    the bound in that row, so no implementation could on this machine and placement."""
    value = ratio(row, versus)
    if value is None:
        return None, "n/a"
    if value >= bound if op == ">=" else value <= bound:
        return value, "met"
    floor, theirs = row.values.get(FLOOR), row.values.get(versus)
    if (
        op == ">="
        and isinstance(floor, (int, float))
        and isinstance(theirs, (int, float))
        and theirs
        and floor / theirs < bound
    ):
        return value, "floor-bound"
    return value, "NOT met"


#: Measures of the issue's targets read against the SDK as installed.
_INSTALLED_TWINS = frozenset(t.measure for t in TARGETS if t.measure.endswith(AS_INSTALLED))


def check_targets(run: Run, peer_stack: str = "same") -> list[dict[str, Any]]:
    out = []
    for target in TARGETS:
        text, measure, versus, op, bound, kind = dataclasses.astuple(target)
        if peer_stack == "default":
            # The SDK column is the SDK as installed: the issue's baseline is the plain
            # row; the same-stack comparison needs a run without --peer-stack default.
            if measure.endswith(AS_INSTALLED):
                measure = measure[: -len(AS_INSTALLED)]
            elif kind == STRICTER and measure + AS_INSTALLED in _INSTALLED_TWINS:
                measure = ""  # the same-stack twin of an issue target: equal to it here
        row = run.rows.get(measure)
        value, verdict = _verdict(row, versus, op, bound) if row else (None, "n/a")
        out.append(
            {
                "target": text,
                "kind": kind,
                "ratio": value,
                "bound": f"{op} {bound}",
                "verdict": verdict,
            }
        )
    growth = next((r for m, r in run.rows.items() if m.startswith("RSS growth")), None)
    value = growth.values.get(OURS) if growth else None
    verdict = "n/a"
    if isinstance(value, float):
        verdict = "met" if value <= 1.10 else "NOT met"
    out.append(
        {
            "target": "RSS after the larger call count within 10% of RSS after the smaller",
            "kind": ISSUE,
            "ratio": value,
            "bound": "<= 1.1",
            "verdict": verdict,
        }
    )
    cpu = run.rows.get(GATEWAY_CPU)
    value = cpu.values.get(OURS) if cpu else None
    out.append(
        {
            "target": "gateway CPU per forwarded tools/call at c=16 <= 1.5x the upstream's",
            "kind": ISSUE,
            "ratio": value,
            "bound": "<= 1.5",
            "verdict": "n/a" if value is None else "met" if value <= 1.5 else "NOT met",
        }
    )
    return out


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }


# ---------------------------------------------------------------------------- main


@contextlib.contextmanager
def pinned(cpu: int | None) -> Iterator[None]:
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: seconds, no peers")
    ap.add_argument("--json", default="bench-results.json", help="where to write the JSON")
    ap.add_argument("--peers-venv", default=str(DEFAULT_PEERS_VENV))
    ap.add_argument("--install-peers", action="store_true", help="create the peers venv and exit")
    ap.add_argument("--duration", type=float, help="seconds per wrk run")
    ap.add_argument("--rounds", type=int, help="alternating rounds per measure")
    ap.add_argument("--rss-calls", help="two call counts for the RSS check, e.g. 10000,100000")
    ap.add_argument(
        "--async-tools",
        action="store_true",
        help="every contender's echo is `async def` (default: a plain `def`, the issue's example)",
    )
    ap.add_argument(
        "--peer-stack",
        choices=("same", "default"),
        default="same",
        help="peers' stack: 'same' as mcpkit (uvloop+httptools over HTTP, uvloop for stdio "
        "servers and all clients; default) or 'default' (what `pip install mcp` gives: "
        "asyncio+h11, the peers' own loop over stdio, plain asyncio for every client)",
    )
    ap.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin servers and load generators to separate cores (default: pinned; "
        "unpinned, a ping-pong can share a core and skip cross-core wake-ups)",
    )
    ap.add_argument(
        "--only",
        help=f"comma-separated sections of {','.join(SECTIONS + EXTRA_SECTIONS)} "
        "(variants, middleware, scale: only when named)",
    )
    ap.add_argument(
        "--ab-base",
        metavar="DIR",
        help="variants, middleware: also run the server on DIR/src (a tree of the commit to "
        "compare with)",
    )
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: blocks
    if args.install_peers:
        return install_peers(Path(args.peers_venv))
    settings = make_settings(args)
    if args.peer_stack == "default":
        os.environ["MCPKIT_BENCH_PEER_STACK"] = "default"  # read by bench/peers/_serve.py
    else:
        os.environ.pop("MCPKIT_BENCH_PEER_STACK", None)
    if args.async_tools:
        os.environ["MCPKIT_BENCH_ASYNC_TOOLS"] = "1"  # read by bench/peers/*_server.py
    else:
        os.environ.pop("MCPKIT_BENCH_ASYNC_TOOLS", None)
    ctx_contenders = contenders(args, settings)
    from .coldstart import bench_coldstart  # imports this module
    from .middleware import bench_middleware
    from .scale import bench_scale
    from .stdio import bench_stdio  # imports this module
    from .variants import bench_variants, variants_table

    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="mcpkit-bench-") as workdir:
        run = Run(settings, ctx_contenders, workdir)
        for c in ctx_contenders.values():
            if not c.available:
                run.note(f"{c.name}: {c.why_not}")
        steps = {
            "import": bench_import,
            "inproc": bench_inproc,
            "stdio": bench_stdio,
            "http": bench_http,
            "rss": bench_rss,
            "gateway": bench_gateway,
            "coldstart": bench_coldstart,
            "variants": lambda r: bench_variants(r, args.ab_base),
            "middleware": lambda r: bench_middleware(r, args.ab_base),
            "scale": bench_scale,  # bench/scale.py (issue #23)
        }
        with pinned(settings.client_cpu):
            for section, step in steps.items():
                if section in settings.sections:
                    step(run)
    print()
    print(
        f"mcpkit benchmark, {started:%Y-%m-%d %H:%M} UTC, {machine()['cpu']} x{os.cpu_count()}"
        f"{' (quick)' if settings.quick else ''}; echo is "
        f"{'async def' if args.async_tools else 'a plain def'} in every contender; "
        f"peers' stack: {STACKS[args.peer_stack]}; "
        "ratios are mcpkit / the column's contender"
    )
    if run.rows:
        print(table(run))
    if run.variants:
        print(
            "\nmcpkit against itself (bench/variants.py, bench/middleware.py; medians of "
            "alternating rounds):"
        )
        print(variants_table(run.variants))
    targets = check_targets(run, args.peer_stack)
    print("\ntargets (informational, from one run):")
    for kind, title in ((ISSUE, "the issue's"), (STRICTER, "stricter than the issue's")):
        print(f" {title}:")
        for t in targets:
            if t["kind"] == kind:
                shown = "-" if t["ratio"] is None else f"{t['ratio']:.3g}"
                print(f"  [{t['verdict']:>11}] {t['target']}  (ratio {shown}, want {t['bound']})")
    for text in run.notes:
        print(f"  note: {text}")
    payload = {
        "date": started.isoformat(),
        "quick": settings.quick,
        "async_tools": bool(args.async_tools),
        "peer_stack": args.peer_stack,
        "machine": machine(),
        "settings": {
            k: v for k, v in vars(settings).items() if isinstance(v, (int, float, str, tuple, bool))
        },
        "contenders": {
            n: {"available": c.available, "why_not": c.why_not, "versions": c.versions}
            for n, c in ctx_contenders.items()
        },
        "results": [
            {
                "measure": r.measure,
                "unit": r.unit,
                "better": {True: "higher", False: "lower", None: None}[r.higher],
                "values": r.values,
                "errors": r.errors,
                "ratios": {n: ratio(r, n) for n in ALL[1:]},
            }
            for r in run.rows.values()
        ],
        "targets": targets,
        "variants": run.variants,
        "notes": run.notes,
    }
    Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
