"""Who runs in the benchmark and how: the settings of a run, the contenders (mcpkit, the
official SDK, FastMCP, the bare floor) with the command that starts each, and the child
processes they run in (pinned to a core, stopped by their process group)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
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
#: The bench's ``initialize`` request (stdio cold start, the HTTP legacy handshake).
LEGACY_INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}

OURS, SDK, FASTMCP, FLOOR = "mcpkit", "sdk", "fastmcp", "floor"
ALL = (OURS, SDK, FASTMCP, FLOOR)
SECTIONS = ("http", "stdio", "shapes", "inproc", "import", "rss", "gateway", "coldstart")
#: Sections run only when named in ``--only`` (bench/variants.py and bench/middleware.py:
#: mcpkit against itself).
EXTRA_SECTIONS = ("variants", "middleware", "scale", "memory", "host")


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
