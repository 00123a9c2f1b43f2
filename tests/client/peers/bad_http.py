"""A Streamable HTTP "server" that misbehaves per URL path (plain ASGI on uvicorn).

Run: ``python bad_http.py PORT``.  ``server/discover`` is answered normally on every path
(so the client connects in the modern era); the request under test then meets:

* ``/garbage``        a 200 ``application/json`` body that is not JSON
* ``/sse-garbage``    an SSE stream whose event is not JSON
* ``/close-mid``      an SSE stream that ends without the response
* ``/drop-mid``       an SSE stream whose connection is cut (no chunked terminator)
* ``/hang``           a response that never starts
* ``/listen-drop``    ``subscriptions/listen`` acknowledged, then the stream just ends
* ``/html-error``     HTTP 500 with an HTML page
* ``/legacy-only``    answers server/discover with HTTP 400 and a non-JSON body, and
                      serves a legacy session (initialize, tools/list, tools/call; 404 once
                      after the first tools/call to test re-initialization)
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

MODERN = "2026-07-28"
DISCOVER = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
    "ttlMs": 0,
    "cacheScope": "private",
}
STATE = {"sessions": 0, "expired_once": False}


async def body_of(receive: Receive) -> bytes:
    data: bytes = b""
    while True:
        message = await receive()
        data += message.get("body", b"")
        if not message.get("more_body"):
            return data


async def respond(
    send: Send,
    status: int,
    body: bytes,
    ctype: str = "application/json",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", ctype.encode())] + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": body})


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    if scope["method"] != "POST":
        await respond(send, 405, b"")
        return
    message = json.loads(await body_of(receive))
    rid, method = message.get("id"), message.get("method")
    headers = dict(scope["headers"])
    if path == "/legacy-only":
        await legacy(send, rid, method, headers)
        return
    if method == "server/discover":
        await respond(
            send, 200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": DISCOVER}).encode()
        )
        return
    if rid is None:
        await respond(send, 202, b"")
        return
    if path == "/listen-drop" and method == "subscriptions/listen":
        ack = {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "notifications": {"toolsListChanged": True},
                "_meta": {"io.modelcontextprotocol/subscriptionId": rid},
            },
        }
        await respond(send, 200, f"data: {json.dumps(ack)}\n\n".encode(), "text/event-stream")
        return
    if path == "/garbage":
        await respond(send, 200, b'{"jsonrpc": "2.0", "id": ')
    elif path == "/sse-garbage":
        await respond(send, 200, b"event: message\ndata: {nope\n\n", "text/event-stream")
    elif path == "/close-mid":
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "working"},
        }
        await respond(send, 200, f"data: {json.dumps(note)}\n\n".encode(), "text/event-stream")
    elif path == "/drop-mid":
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send({"type": "http.response.body", "body": b": hi\n\n", "more_body": True})
        raise RuntimeError("simulated crash mid-stream")  # uvicorn drops the connection
    elif path == "/hang":
        await asyncio.sleep(3600)
    elif path == "/html-error":
        await respond(send, 500, b"<html><body>Internal Server Error</body></html>", "text/html")
    else:
        await respond(send, 404, b"not found", "text/plain")


async def legacy(send: Send, rid: Any, method: Any, headers: dict[bytes, bytes]) -> None:
    if method == "server/discover":
        await respond(send, 400, b"Bad Request: No valid session ID provided", "text/plain")
        return
    if method == "initialize":
        STATE["sessions"] += 1
        sid = f"session-{STATE['sessions']}".encode()
        body = {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-http", "version": "0"},
            },
        }
        await respond(send, 200, json.dumps(body).encode(), headers=[(b"mcp-session-id", sid)])
        return
    if rid is None:
        await respond(send, 202, b"")
        return
    session = headers.get(b"mcp-session-id", b"").decode()
    if method == "tools/call" and session == "session-1" and not STATE["expired_once"]:
        STATE["expired_once"] = True
        gone = {"jsonrpc": "2.0", "error": {"code": -32001, "message": "Session not found"}}
        await respond(send, 404, json.dumps(gone).encode())
        return
    if method == "tools/list":
        result = {"tools": [{"name": "who", "inputSchema": {"type": "object"}}]}
    else:
        result = {"content": [{"type": "text", "text": f"served by {session}"}]}
    await respond(send, 200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode())


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error")
