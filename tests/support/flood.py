"""A server that floods its client: one answer that never ends, sent slowly in chunks.

:class:`Flood` is an ASGI app (serve it with :class:`support.servers.ThreadServer`): its
answer to a POST opens an SSE ``data:`` line (or a JSON body) and keeps adding to it, one
chunk at a time, without ever finishing it, until the client closes the connection or
``cap`` bytes went out (then it drops the connection, the line still open).  It records
how many bytes it managed to send, which is what a test of a size limit asserts on: a
client that measures while it reads closes the connection after about its limit; one that
assembles first lets the server reach its cap.

``shape`` picks the answer: ``"sse"`` (a Streamable HTTP SSE answer), ``"json"`` (a JSON
body announcing its full ``cap`` in ``Content-Length``), ``"chunked"`` (a JSON body without
a length) or ``"legacy-sse"`` (a 2024-11-05 HTTP+SSE server: the GET stream's ``endpoint``
event, then a ``message`` event that never ends).  ``inner``: an ASGI app that answers
every request except a ``tools/call`` of ``tool`` (a gateway's upstream must list its tools
first): :func:`flooded_upstream` is a real one with a ``hello`` tool beside ``flood``.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpkit import Server
from mcpkit.transports.http import McpHttpApp

#: The start of a JSON-RPC result whose text never ends.
OPEN_RESULT = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'


class Flood:
    def __init__(
        self,
        shape: str = "sse",
        *,
        cap: int,
        chunk: int = 64 * 1024,
        inner: ASGIApp | None = None,
        tool: str = "flood",
    ) -> None:
        if shape not in ("sse", "json", "chunked", "legacy-sse"):
            raise ValueError(f"unknown flood shape {shape!r}")
        self.shape = shape
        self.cap = cap
        self.chunk = b"x" * chunk
        self.inner = inner
        self.tool = tool
        #: Bytes of the endless answer handed to the server so far (all floods together).
        self.sent = 0
        #: Set when a flood ended: the client closed the connection, or the cap was reached.
        self.ended = threading.Event()
        #: How many floods the client abandoned (closed the connection before the cap).
        self.abandoned = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if self.inner is not None:
                await self.inner(scope, receive, send)
            return
        body = b""
        if scope["method"] == "POST":
            body = await _read_request(receive)
        if self.inner is not None and not self._floods(body):
            await self.inner(scope, _replay(body, receive), send)
            return
        if self.shape == "legacy-sse" and scope["method"] == "POST":
            await _respond(send, 202, b"text/plain", b"")
            return
        await self._flood(receive, send)

    def _floods(self, body: bytes) -> bool:
        try:
            message = json.loads(body)
        except ValueError:
            return False
        params = message.get("params") if isinstance(message, dict) else None
        return (
            message.get("method") == "tools/call"
            and isinstance(params, dict)
            and params.get("name") == self.tool
        )

    async def _flood(self, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        opening = b"event: message\ndata: " + OPEN_RESULT
        if self.shape == "legacy-sse":
            opening = b"event: endpoint\ndata: /messages?session=1\n\n" + opening
        elif self.shape in ("json", "chunked"):
            headers = [(b"content-type", b"application/json")]
            opening = OPEN_RESULT
            if self.shape == "json":
                headers.append((b"content-length", str(self.cap + len(opening)).encode()))
        gone = anyio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": opening, "more_body": True})
            sent = 0
            while not gone.is_set() and sent < self.cap:
                await send({"type": "http.response.body", "body": self.chunk, "more_body": True})
                sent += len(self.chunk)
                self.sent += len(self.chunk)
                await anyio.sleep(0.002)  # slowly: a reader that measures keeps up
            if gone.is_set():
                self.abandoned += 1
            tg.cancel_scope.cancel()
        self.ended.set()
        # Returning with the body unfinished: uvicorn drops the connection mid-line.


def flooded_upstream() -> McpHttpApp:
    """A real mcpkit server over HTTP with the tools ``hello`` (answers ``hello NAME``) and
    ``flood`` (its answer is :class:`Flood`'s: the server's own is never reached)."""
    server = Server("flooded")

    @server.tool()
    def hello(name: str) -> str:
        return f"hello {name}"

    @server.tool()
    def flood() -> str:
        return ""

    return McpHttpApp(server)


async def _read_request(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the already-read request body once, then the real one."""
    given = False

    async def again() -> Any:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def _respond(send: Send, status: int, kind: bytes, body: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]}
    )
    await send({"type": "http.response.body", "body": body})
