"""uvicorn launcher shared by the peer HTTP servers: the same stack as mcpkit's default
(uvloop + httptools when installed), one worker, no access log, no proxy-headers
middleware.  With the environment
variable MCPKIT_BENCH_PEER_STACK=default: asyncio + h11, what ``pip install mcp`` (uvicorn
without extras) gives."""

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
