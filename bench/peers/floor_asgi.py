"""The HTTP floor: a bare ASGI callable on the same server stack as mcpkit (uvicorn with
uvloop + httptools when installed).  It reads the body, decodes it with orjson, answers
JSON, or SSE when the request produces a progress notification first, and hands out a
session id on ``initialize`` (legacy era) without keeping any session state.

usage: python floor_asgi.py PORT
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import orjson
from floor_common import answer, progress

_JSON = (b"content-type", b"application/json")
_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    msg = orjson.loads(body)
    if "id" not in msg:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    note = progress(msg)
    out = orjson.dumps(answer(msg))
    if note is not None:
        await send({"type": "http.response.start", "status": 200, "headers": _SSE})
        event_bytes = b"event: message\ndata: " + orjson.dumps(note) + b"\n\n"
        await send({"type": "http.response.body", "body": event_bytes, "more_body": True})
        final = b"event: message\ndata: " + out + b"\n\n"
        await send({"type": "http.response.body", "body": final})
        return
    headers = [_JSON, (b"content-length", str(len(out)).encode())]
    if msg.get("method") == "initialize":
        headers.append((b"mcp-session-id", uuid.uuid4().hex.encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": out})


if __name__ == "__main__":
    from _serve import serve

    serve(app, int(sys.argv[1]), peer=False)
