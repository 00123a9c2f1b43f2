"""The gateway floor on the gateway's own stack: uvicorn (httptools, uvloop) in front, the
pooled :class:`~mcpkit.transports.http11.Http11Pool` behind, nothing in between.

An ASGI app that reads the front request's body, writes it with its ``Mcp-*`` headers to
the upstream over the pool, reads the whole answer and sends it back.  No JSON, no
policy, no checks.  Against ``floor_gateway.py`` (the same without uvicorn and the pool)
it prices the ASGI cycle and the pool; against the gateway's direct path, everything
mcpkit does per call (bench/RESULTS.md, "Issue #20, part 2").

usage: python floor_asgi_gateway.py PORT UPSTREAM_PORT   (the upstream on 127.0.0.1, /mcp)
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

from mcpkit.transports.client_http_wire import read_body
from mcpkit.transports.http.asgi import read_body_now
from mcpkit.transports.http11 import Http11Pool

_HEAD = (
    b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"accept: application/json, text/event-stream\r\n"
)
_JSON = [(b"content-type", b"application/json")]


class Floor:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.pool: Http11Pool | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if self.pool is None:
            self.pool = Http11Pool()
        body = await read_body_now(receive, 1 << 24, None, None)
        mcp = b"".join(k + b": " + v + b"\r\n" for k, v in scope["headers"] if k[:4] == b"mcp-")
        data = _HEAD + mcp + b"content-length: %d\r\n\r\n" % len(body) + body
        response = await self.pool.request("127.0.0.1", self.upstream_port, data)
        answer = response.read_now(1 << 24)  # (the usual: here whole with its head)
        if answer is None:
            answer = await read_body(response, 1 << 24, "the call")
        length = [(b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": _JSON + length})
        await send({"type": "http.response.body", "body": answer})


if __name__ == "__main__":
    app = Floor(int(sys.argv[2]))
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        loop="uvloop",
        http="httptools",
        lifespan="off",
        log_level="warning",
        access_log=False,
    )
