"""Open a client to a server over any transport, for tests that run one scenario on each.

``memory`` is ``Client(server)`` (no process, no socket).  ``stdio`` starts
``python -m mcpkit serve TARGET`` as a child process, exactly as a desktop host would.
``http`` serves the server object as :class:`~mcpkit.transports.http.McpHttpApp` on a real
uvicorn socket bound to 127.0.0.1 on a free port, in the test's own event loop (asyncio
only), so the same object (its state, its lifespan) is behind every transport.

stdio needs the server as something a new process can import: a target string
(``path/to/file.py[:name]`` or ``package.module[:name]``), or a ``Server`` object that is
a global of an importable module (found with :func:`target_of`).  Given a target string,
``http`` starts ``python -m mcpkit serve TARGET --http`` on a free port instead.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import anyio

from ..client import Client, EraCache
from ..server import Server
from ..types.versions import EraChoice

Transport = Literal["memory", "stdio", "http"]
TRANSPORTS: tuple[Transport, ...] = ("memory", "stdio", "http")
"""The transports :func:`connect` and the ``mcp_client`` fixture can run a server over."""
ERAS = ("modern", "legacy")
"""The protocol eras: ``modern`` (2026-07-28, stateless) and ``legacy`` (2025-11-25 sessions)."""


def target_of(server: Server | str) -> str:
    """``file.py:name`` for a ``Server`` that is a module global (``mcpkit serve`` syntax)."""
    if isinstance(server, str):
        return server
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or getattr(module, "__name__", "") == "__main__":
            continue
        for name, value in list(vars(module).items()):
            if value is server:
                return f"{Path(path).resolve()}:{name}"
    raise LookupError(
        f"server {server.info.get('name')!r} is not a global of any imported module, so a "
        f"new process cannot load it: define it at module level, or pass its target "
        f"('path/to/file.py:name') instead of the object"
    )


@contextlib.asynccontextmanager
async def connect(
    server: Server | str,
    *,
    transport: Transport = "memory",
    era: EraChoice = "auto",
    **client_options: Any,
) -> AsyncIterator[Client]:
    """``async with connect(server, transport="stdio", era="legacy") as client:``.

    ``client_options`` go to :class:`~mcpkit.client.Client` (callbacks, ``tasks=True``...).
    ``era="auto"`` always probes: each connection gets its own era cache.
    """
    client_options.setdefault("era_cache", EraCache())
    if transport == "memory":
        if isinstance(server, str):
            raise TypeError("the memory transport needs a Server object, not a target")
        async with Client(server, era=era, **client_options) as client:
            yield client
    elif transport == "stdio":
        argv = [sys.executable, "-m", "mcpkit", "serve", target_of(server), "--state", "memory:"]
        async with Client(argv, era=era, **client_options) as client:
            yield client
    elif transport == "http":
        serving = serve_http(server) if not isinstance(server, str) else serve_http_process(server)
        async with serving as url, Client(url, era=era, **client_options) as client:
            yield client
    else:
        raise ValueError(f"unknown transport {transport!r}; one of {TRANSPORTS}")


@contextlib.asynccontextmanager
async def serve_http(server: Server) -> AsyncIterator[str]:
    """Serve ``server`` over Streamable HTTP on 127.0.0.1 (a free port) in this event loop;
    yields its URL.  Needs asyncio (uvicorn does not run on trio)."""
    import uvicorn

    from ..transports.http import McpHttpApp

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = McpHttpApp(server)
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=2
    )
    web = uvicorn.Server(config)
    # Leave the test runner's signal handlers alone (uvicorn swaps SIGINT/SIGTERM).
    web.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    try:
        # The server's lifespan is tied to this block (not started lazily by the first
        # request in a task that would outlive the test's event loop).
        async with app.lifespan_context(), anyio.create_task_group() as tg:
            tg.start_soon(web.serve, [sock])
            with anyio.fail_after(10):
                while not web.started:
                    await anyio.sleep(0.005)
            try:
                yield f"http://127.0.0.1:{port}/mcp"
            finally:
                web.should_exit = True
    finally:
        sock.close()


@contextlib.asynccontextmanager
async def serve_http_process(target: str, *, startup_timeout: float = 30.0) -> AsyncIterator[str]:
    """``python -m mcpkit serve TARGET --http`` on a free 127.0.0.1 port, as a user runs it;
    yields its URL once it accepts connections, and terminates it afterwards."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # a small race with other processes binding it: the start fails loudly
    argv = [
        sys.executable,
        "-m",
        "mcpkit",
        "serve",
        target,
        "--http",
        "--port",
        str(port),
        "--state",
        "memory:",
    ]
    # Its output goes to a file, quoted if it fails to start (a pipe nobody reads could
    # fill up and stall a chatty server).
    with tempfile.TemporaryFile() as log:
        process = await anyio.open_process(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            with anyio.fail_after(startup_timeout):
                while not await _accepts(port):
                    if process.returncode is not None:
                        log.seek(0)
                        tail = log.read()[-2000:].decode(errors="replace")
                        raise RuntimeError(
                            f"mcpkit serve {target} --http exited with "
                            f"{process.returncode}:\n{tail}"
                        )
                    await anyio.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.terminate()
                    with anyio.move_on_after(5):
                        await process.wait()
                    if process.returncode is None:
                        process.kill()
                await process.aclose()


async def _accepts(port: int) -> bool:
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return False
    await stream.aclose()
    return True


__all__ = [
    "ERAS",
    "TRANSPORTS",
    "Transport",
    "connect",
    "serve_http",
    "serve_http_process",
    "target_of",
]
