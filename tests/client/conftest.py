"""Fixtures for the client tests: real servers in real processes, real sockets.

Servers are started the way a user starts them (``python -m mcpkit serve ...``); HTTP
ones bind 127.0.0.1 on a free port and are shared per session (starting Python is the
slow part).  Tests use the anyio pytest plugin on asyncio; modules that are cheap to run
twice also parametrize ``anyio_backend`` with trio.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CLIENT_TESTS = Path(__file__).resolve().parent
TESTS = CLIENT_TESTS.parent
REPO = TESTS.parent
PEERS = CLIENT_TESTS / "peers"
FIXTURE_SERVER = REPO / "tests" / "conformance" / "server.py"
SLOW_SERVER = PEERS / "slow_server.py"

if str(TESTS) not in sys.path:  # for tests/support (schema validation)
    sys.path.insert(0, str(TESTS))


def serve_command(script: Path, *extra: str) -> list[str]:
    """argv that serves an mcpkit server script over stdio (or HTTP with extra args)."""
    return [sys.executable, "-m", "mcpkit", "serve", str(script), *extra]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.process.poll() is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)


def start_server(argv: list[str], port: int, url: str, log: Path,
                 timeout: float = 30.0) -> ServerProcess:
    with open(log, "wb") as sink:
        process = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=sink,
                                   stderr=sink, start_new_session=True)
    server = ServerProcess(url, process, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.tail()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return server
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"server not listening on {port} after {timeout}s:\n{server.tail()}")


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Our conformance fixture server over Streamable HTTP (both eras)."""
    port = free_port()
    argv = serve_command(FIXTURE_SERVER, "--http", "--port", str(port))
    server = start_server(argv, port, f"http://127.0.0.1:{port}/mcp",
                          tmp_path_factory.mktemp("http-server") / "log.txt")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def slow_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    port = free_port()
    argv = serve_command(SLOW_SERVER, "--http", "--port", str(port))
    server = start_server(argv, port, f"http://127.0.0.1:{port}/mcp",
                          tmp_path_factory.mktemp("slow-server") / "log.txt")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def bad_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    port = free_port()
    argv = [sys.executable, str(PEERS / "bad_http.py"), str(port)]
    server = start_server(argv, port, f"http://127.0.0.1:{port}",
                          tmp_path_factory.mktemp("bad-http") / "log.txt")
    yield server
    server.stop()


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
