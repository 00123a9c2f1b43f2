"""The stack the peers run on.  HTTP: the stack ``mcpkit serve --http`` runs on, uvicorn
with uvloop + httptools (when installed) and mcpkit's own uvicorn protocol class (the
request-head guard and the write coalescing of ``mcpkit.transports.http.server``, loaded
from this checkout by path, so the peers' venv needs no mcpkit), one worker, no access
log, no proxy-headers middleware.  stdio servers and every framework's client: uvloop, as
mcpkit's stdio server picks by itself.  With the environment variable
MCPKIT_BENCH_PEER_STACK=default: what ``pip install mcp`` gives, asyncio + h11 over HTTP,
the peers' own default loop (asyncio) over stdio, and plain asyncio for every client
(mcpkit's too: a client runs in the application's loop)."""

from __future__ import annotations

import importlib.util
import os
from typing import Any


def serve(app: Any, port: int, *, peer: bool = True) -> None:
    """Run ``app``; ``peer=False`` (the floor) always uses mcpkit's stack."""
    import uvicorn

    if peer and os.environ.get("MCPKIT_BENCH_PEER_STACK") == "default":
        loop, http = "asyncio", "h11"  # what `pip install mcp` gives, stock uvicorn
    else:
        have = importlib.util.find_spec
        loop = "uvloop" if have("uvloop") else "asyncio"
        classes = _mcpkit_server_module().protocol_classes()
        http = classes.get("httptools", classes["h11"])
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # as `mcpkit serve` (nobody here reads X-Forwarded-For)
        loop=loop,
        http=http,
        lifespan="on",
    )


def _mcpkit_server_module() -> Any:
    """``mcpkit/transports/http/server.py`` of this checkout, loaded on its own (it imports
    only the standard library and uvicorn)."""
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "src/mcpkit/transports/http/server.py"
    spec = importlib.util.spec_from_file_location("_mcpkit_http_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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
