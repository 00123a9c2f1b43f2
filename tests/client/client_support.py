"""Helpers for the client tests: paths, free ports, starting and stopping real servers.

A module with a unique name (not ``conftest``): several test directories have a
``conftest.py``, so ``from conftest import ...`` would depend on which one was loaded last.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLIENT_TESTS = Path(__file__).resolve().parent
TESTS = CLIENT_TESTS.parent
REPO = TESTS.parent
PEERS = CLIENT_TESTS / "peers"
FIXTURE_SERVER = REPO / "tests" / "conformance" / "server.py"
SLOW_SERVER = PEERS / "slow_server.py"

if str(TESTS) not in sys.path:  # for tests/support (schema validation)
    sys.path.insert(0, str(TESTS))

from support.servers import kill_group, spawn, wait_port  # noqa: E402

_OBJECTS: dict[tuple[Path, str], Any] = {}


def fixture_object(backend: str, script: Path = FIXTURE_SERVER) -> Any:
    """The ``server`` object a fixture script defines, for ``Client(server)`` in memory:
    loaded once per script and event-loop backend (a ``Server`` keeps event-loop objects,
    its lifespan lock, so one object cannot move from asyncio to trio)."""
    key = (script, backend)
    if key not in _OBJECTS:
        name = f"memory_{script.stem}_{backend}"
        spec = importlib.util.spec_from_file_location(name, script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _OBJECTS[key] = module.server
    return _OBJECTS[key]


def serve_command(script: Path, *extra: str) -> list[str]:
    """argv that serves an mcpkit server script over stdio (or HTTP with extra args)."""
    return [sys.executable, "-m", "mcpkit", "serve", str(script), *extra]


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"

    def stop(self) -> None:
        kill_group(self.process)


def start_server(
    argv: list[str], port: int, url: str, log: Path, timeout: float = 30.0
) -> ServerProcess:
    process = spawn(argv, log, cwd=REPO)
    server = ServerProcess(url, process, log)
    try:
        wait_port(port, process, log, timeout=timeout)
    except RuntimeError:
        server.stop()
        raise
    return server


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still "exists": check its state where /proc is available.
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        with contextlib.suppress(OSError):
            return stat.read_text().split(") ", 1)[1][0] != "Z"
    return True
