"""Listen and legacy GET streams as the change bus writes to them (issue #23's cheap
streams), on an in-process uvicorn with raw sockets on 127.0.0.1:

* the shared keep-alive timer still sends an idle stream a ``:`` comment, and never
  sooner than the interval after the stream's last write;
* a client that goes away frees its stream (bus subscriber, keep-alive entry) at once;
* a client that stops reading does not hold up the others, and gets every event, in
  order, once it reads again (the write that had to wait is finished by its own task);
* behind an ASGI wrapper whose ``send`` cannot be run outside the stream's task, the
  stream's task writes the events itself.

Every case runs with uvicorn's own ``send`` and with a wrapped one."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import Server
from mcpkit.transports.http import HttpOptions, McpHttpApp
from support.httpclient import LegacySessionClient, McpHttp
from support.mcp import modern_headers, modern_request
from support.servers import ThreadServer
from support.waits import eventually

WAIT = 10.0  # generous upper bound for "it happens", never a performance claim
INTERVAL = 0.6  # the keep-alive interval these servers use
BIG = 200_000  # bytes of URI per resource event: a few fill the sockets' buffers


class SendWrapper:
    """An ASGI middleware that wraps ``send`` (as CORS or telemetry middleware do): the
    bus cannot run such a ``send`` by hand, so the stream's own task must write."""

    def __init__(self, app: McpHttpApp) -> None:
        self.app = app  # also how the uvicorn server finds shutdown_streams

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def wrapped(message: Any) -> None:
            await send(message)

        await self.app(scope, receive, wrapped)


def make_app() -> McpHttpApp:
    server = Server("listen-streams")

    @server.resource("big://{index}")
    def big(index: str) -> str:
        return index

    @server.tool
    def change_tools() -> str:
        server.notify_tools_changed()
        return "changed"

    @server.tool
    def update_big(count: int) -> str:
        for i in range(count):
            server.notify_resource_updated(big_uri(i))
        return "updated"

    app = McpHttpApp(server, HttpOptions(max_body_bytes=64 * 1024 * 1024))
    app.keepalive.interval = INTERVAL
    return app


def big_uri(i: int) -> str:
    return f"big://{i:04d}-" + "x" * BIG


@pytest.fixture(params=["uvicorn-send", "wrapped-send"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[McpHttpApp, ThreadServer]]:
    app = make_app()
    asgi: Any = app if request.param == "uvicorn-send" else SendWrapper(app)
    with ThreadServer(asgi) as server:
        yield app, server


def open_listen(port: int, params: dict[str, Any], rcvbuf: int | None = None) -> socket.socket:
    message = modern_request("listen-1", "subscriptions/listen", params)
    body = json.dumps(message).encode()
    headers = modern_headers(message)
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock = socket.socket()
    if rcvbuf is not None:  # before connecting: the window the server may fill
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(WAIT)
    sock.connect(("127.0.0.1", port))
    sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
    return sock


def open_get(http: McpHttp, port: int) -> socket.socket:
    session = LegacySessionClient(http)
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
        f"MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session.session_id}\r\n\r\n".encode()
    )
    return sock


def read_until(sock: socket.socket, marker: bytes, buffer: bytes = b"") -> tuple[bytes, bytes]:
    """Read until ``marker``: (everything up to and including it, what came after)."""
    while marker not in buffer:
        chunk = sock.recv(65536)
        assert chunk, f"stream closed before {marker!r}: {buffer[-300:]!r}"
        buffer += chunk
    head, _, rest = buffer.partition(marker)
    return head + marker, rest


def call(http: McpHttp, name: str, arguments: dict[str, Any] | None = None) -> None:
    reply = http.modern("tools/call", {"name": name, "arguments": arguments or {}})
    assert reply.status == 200, reply


def test_idle_streams_get_keepalive_comments_from_the_shared_timer(
    served: tuple[McpHttpApp, ThreadServer],
) -> None:
    app, server = served
    http = McpHttp(server.url, server.alive)
    began = time.monotonic()
    listen = open_listen(server.port, {"notifications": {"toolsListChanged": True}})
    get = open_get(http, server.port)
    try:
        _, rest = read_until(listen, b"notifications/subscriptions/acknowledged")
        _, rest = read_until(listen, b":\r\n\r\n", rest)  # (the ack has no such bytes)
        # Never sooner than one interval after the stream's last write (the ack).
        assert time.monotonic() - began >= INTERVAL
        _, more = read_until(get, b"\r\n\r\n")  # the response head
        _, more = read_until(get, b":\r\n\r\n", more)  # the GET stream's opening comment
        read_until(get, b":\r\n\r\n", more)  # ... and one from the timer
        # A change still reaches the stream after keep-alives, as an event.
        call(http, "change_tools")
        read_until(listen, b"notifications/tools/list_changed", rest)
        assert len(app.keepalive.sinks) == 2
    finally:
        listen.close()
        get.close()
        http.close()


def test_a_client_that_goes_away_frees_its_stream(
    served: tuple[McpHttpApp, ThreadServer],
) -> None:
    app, server = served
    http = McpHttp(server.url, server.alive)
    bus = app.server.bus
    socks = [
        open_listen(server.port, {"notifications": {"toolsListChanged": True}}) for _ in range(10)
    ]
    socks += [open_get(http, server.port) for _ in range(5)]
    try:
        for sock in socks[:10]:
            read_until(sock, b"notifications/subscriptions/acknowledged")
        for sock in socks[10:]:
            read_until(sock, b":\r\n\r\n")
        eventually(lambda: bus.listener_count == 15, WAIT, "15 streams attached")
        assert len(app.listen_streams) == 15
        for sock in socks:
            sock.close()
        eventually(lambda: bus.listener_count == 0, WAIT, "every stream detached")
        eventually(
            lambda: not app.listen_streams and not app.keepalive.sinks, WAIT, "all forgotten"
        )
        http.assert_healthy()
    finally:
        for sock in socks:
            sock.close()
        http.close()


def test_a_client_that_stops_reading_holds_up_nobody_and_loses_nothing(
    served: tuple[McpHttpApp, ThreadServer],
) -> None:
    app, server = served
    http = McpHttp(server.url, server.alive)
    count = 24  # ~4.8 MB of events: more than the kernel and uvicorn buffer for a client
    params = {"notifications": {"resourceSubscriptions": [big_uri(i) for i in range(count)]}}
    stalled = open_listen(server.port, params, rcvbuf=4096)
    reader = open_listen(server.port, params)
    try:
        _, stalled_rest = read_until(stalled, b"notifications/subscriptions/acknowledged")
        _, reader_rest = read_until(reader, b"notifications/subscriptions/acknowledged")
        call(http, "update_big", {"count": count})  # answered while one client stalls
        seen, rest = [], reader_rest
        for i in range(count):  # the other client gets every event meanwhile
            _, rest = read_until(reader, f"big://{i:04d}-".encode(), rest)
            seen.append(i)
        assert seen == list(range(count))
        http.assert_healthy()
        # Now the stalled client reads: every event, in order, nothing lost.
        rest = stalled_rest
        for i in range(count):
            _, rest = read_until(stalled, f"big://{i:04d}-".encode(), rest)
        call(http, "change_tools")  # and the stream is back to direct writes
        read_until(reader, b"notifications/resources/updated", rest)
    finally:
        stalled.close()
        reader.close()
        http.close()
    eventually(lambda: not app.listen_streams, WAIT, "both streams freed")
