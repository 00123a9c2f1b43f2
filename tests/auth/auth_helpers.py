"""Helpers for the auth tests: serve an ASGI app on uvicorn (127.0.0.1, a thread)."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "auth"))

from local_as import LocalAuthorizationServer  # noqa: E402

__all__ = ["LocalAuthorizationServer", "Stack", "serve"]


@contextmanager
def serve(make_app: Callable[[str], Any]) -> Iterator[tuple[str, Any]]:
    """Bind a free port, build the app for its base URL, serve it; yield (base, app)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = make_app(base)
    config = uvicorn.Config(app, log_level="warning", lifespan="auto", loop="asyncio")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield base, app
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass
class Stack:
    issuer: str
    authz: LocalAuthorizationServer
    mcp_url: str
    app: Any
