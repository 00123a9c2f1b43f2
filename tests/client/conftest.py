"""Fixtures for the client tests: real servers in real processes, real sockets.

Servers are started the way a user starts them (``python -m mcpkit serve ...``); HTTP
ones bind 127.0.0.1 on a free port and are shared per session (starting Python is the
slow part).  Tests run on asyncio (spawning processes and serving uvicorn); the few that
are cheap to repeat also run on trio.  Helpers live in ``clientkit.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from clientkit import (
    FIXTURE_SERVER,
    PEERS,
    SLOW_SERVER,
    ServerProcess,
    start_server,
)

from support.servers import free_port, serve_argv


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Our conformance fixture server over Streamable HTTP (both eras)."""
    port = free_port()
    argv = serve_argv(FIXTURE_SERVER, "--http", "--port", str(port))
    server = start_server(
        argv,
        port,
        f"http://127.0.0.1:{port}/mcp",
        tmp_path_factory.mktemp("http-server") / "log.txt",
    )
    yield server
    server.stop()


@pytest.fixture(scope="session")
def slow_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    port = free_port()
    argv = serve_argv(SLOW_SERVER, "--http", "--port", str(port))
    server = start_server(
        argv,
        port,
        f"http://127.0.0.1:{port}/mcp",
        tmp_path_factory.mktemp("slow-server") / "log.txt",
    )
    yield server
    server.stop()


@pytest.fixture(scope="session")
def bad_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    port = free_port()
    argv = [sys.executable, str(PEERS / "bad_http.py"), str(port)]
    server = start_server(
        argv, port, f"http://127.0.0.1:{port}", tmp_path_factory.mktemp("bad-http") / "log.txt"
    )
    yield server
    server.stop()
