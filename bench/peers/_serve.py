"""The stack the peers run on.  HTTP: uvicorn with the same stack as mcpkit's default
(uvloop + httptools when installed), one worker, no access log, no proxy-headers
middleware.  stdio servers and every framework's client: uvloop, as mcpkit's stdio server
picks by itself.  With the environment variable MCPKIT_BENCH_PEER_STACK=default: what
``pip install mcp`` gives, asyncio + h11 over HTTP, the peers' own default loop (asyncio)
over stdio, and plain asyncio for every client (mcpkit's too: a client runs in the
application's loop)."""

from __future__ import annotations

import importlib.util
import os
from typing import Any


def serve(app: Any, port: int, *, peer: bool = True) -> None:
    """Run ``app``; ``peer=False`` (the floor) always uses mcpkit's stack."""
    import uvicorn

    def have(name: str) -> bool:
        if peer and os.environ.get("MCPKIT_BENCH_PEER_STACK") == "default":
            return False
        return importlib.util.find_spec(name) is not None

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # as `mcpkit serve` (nobody here reads X-Forwarded-For)
        loop="uvloop" if have("uvloop") else "asyncio",
        http="httptools" if have("httptools") else "h11",
        lifespan="on",
    )


def same_loop() -> bool:
    """Whether stdio servers and clients run on uvloop, as mcpkit's stdio server does by
    itself: yes unless MCPKIT_BENCH_PEER_STACK=default (each peer's own default loop, and
    plain asyncio for every client) or uvloop is missing."""
    if os.environ.get("MCPKIT_BENCH_PEER_STACK") == "default":
        return False
    return importlib.util.find_spec("uvloop") is not None


def use_same_loop() -> None:
    """Make the next ``asyncio``/``anyio.run`` loop a uvloop one when :func:`same_loop`."""
    if same_loop():
        import asyncio

        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
