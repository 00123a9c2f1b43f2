"""The gateway floor: the least a Python forwarder does per call on uvloop + httptools.

It parses the front request, writes its body unchanged (with the ``Mcp-*`` headers) to a
pooled keep-alive connection to the upstream, parses the answer and writes its body back.
No JSON, no policy, no ASGI, no cancellation, no error handling: not a gateway, only the
price of the two sockets and two HTTP parses that any gateway pays, to read the gateway's
CPU per forwarded call against (bench/RESULTS.md, issue #20).

usage: python floor_gateway.py PORT UPSTREAM_PORT   (the upstream on 127.0.0.1, path /mcp)
"""

from __future__ import annotations

import asyncio
import sys
from typing import cast

import httptools
import uvloop

_HEAD = (
    b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"accept: application/json, text/event-stream\r\n"
)
_ANSWER = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"


class Upstream(asyncio.Protocol):
    """One keep-alive connection to the upstream; one request at a time."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.answer: asyncio.Future[bytes] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        body, self.body = b"".join(self.body), []
        if self.answer is not None:
            self.answer.set_result(body)


class Forwarder:
    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[Upstream] = []

    async def forward(self, head: bytes, body: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        if self.idle:
            conn = self.idle.pop()
        else:
            _, conn = await loop.create_connection(Upstream, "127.0.0.1", self.port)
        conn.answer = loop.create_future()
        conn.transport.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        answer = await conn.answer
        self.idle.append(conn)
        return answer


class Front(asyncio.Protocol):
    def __init__(self, forwarder: Forwarder) -> None:
        self.forwarder = forwarder
        self.parser = httptools.HttpRequestParser(self)
        self.headers: list[bytes] = []
        self.body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_message_begin(self) -> None:
        self.headers, self.body = [], []

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name.startswith(b"mcp-"):
            self.headers.append(name + b": " + value + b"\r\n")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        head = _HEAD + b"".join(self.headers)
        asyncio.get_running_loop().create_task(self.answer(head, b"".join(self.body)))

    async def answer(self, head: bytes, body: bytes) -> None:
        out = await self.forwarder.forward(head, body)
        self.transport.write(_ANSWER % len(out) + out)


async def main(port: int, upstream_port: int) -> None:
    forwarder = Forwarder(upstream_port)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Front(forwarder), "127.0.0.1", port)
    await server.serve_forever()


if __name__ == "__main__":
    uvloop.run(main(int(sys.argv[1]), int(sys.argv[2])))
