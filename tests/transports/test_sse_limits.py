"""Limits inside the decoders, over a real socket: an SSE line or event, or a JSON body,
is measured while it arrives and refused as soon as it passes the limit, never assembled
first (the decoder itself: ``test_sse_decoder.py``).

The server is :class:`support.flood.Flood`: it keeps one answer open, adding to it in
chunks, and records how much it managed to send before the client closed the connection.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpkit.transports.client_base import MessageTooLargeError
from mcpkit.transports.client_http import HttpTransport
from mcpkit.transports.client_http_wire import read_body
from mcpkit.transports.http11 import Http11Pool, available
from support.flood import OPEN_RESULT, Flood
from support.servers import ThreadServer

pytestmark = pytest.mark.anyio

LIMIT = 1024 * 1024
#: What a flood sends when nobody stops it (a client that assembles before measuring).
CAP = 32 * LIMIT
#: A client that measures while it reads stops the server well before this.
BOUND = 10 * LIMIT
MODERN = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}


# ------------------------------------------------------------------------------ over a socket


async def _request(url: str, pool: Http11Pool | None = None) -> dict[str, Any]:
    async with HttpTransport(url, max_message_bytes=LIMIT, pool=pool) as transport:
        return await transport.request("tools/call", {"name": "flood", **MODERN}, timeout=120)


@pytest.mark.parametrize("shape", ["sse", "json", "chunked"])
async def test_client_abandons_an_endless_answer_at_its_limit(shape: str) -> None:
    flood = Flood(shape, cap=CAP)
    with ThreadServer(flood, lifespan="off") as server:
        with pytest.raises(MessageTooLargeError) as info:
            await _request(server.url)
        assert await anyio.to_thread.run_sync(flood.ended.wait, 30)
    assert flood.sent < BOUND, f"the server sent {flood.sent} bytes before the client left"
    assert flood.abandoned == 1  # the client closed the connection, mid-line
    message = str(info.value)
    assert "max_message_bytes" in message and f"{LIMIT} bytes" in message
    assert info.value.limit == LIMIT


async def test_a_listen_stream_ends_with_the_error_at_its_limit() -> None:
    flood = Flood("sse", cap=CAP)
    with ThreadServer(flood, lifespan="off") as server:
        async with (
            HttpTransport(server.url, max_message_bytes=LIMIT) as transport,
            transport.listen({"notifications": {"toolsListChanged": True}, **MODERN}) as stream,
        ):
            with pytest.raises(MessageTooLargeError, match=f"max_message_bytes .{LIMIT} bytes"):
                async for _ in stream:
                    pass
            assert await anyio.to_thread.run_sync(flood.ended.wait, 30)
    assert flood.sent < BOUND, f"the server sent {flood.sent} bytes before the client left"
    assert flood.abandoned == 1


@pytest.mark.skipif(not available(), reason="httptools is not installed")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_over_the_pooled_wire_too(anyio_backend: str) -> None:
    # (the client's POSTs to an http:// upstream of a gateway or a proxy)
    flood = Flood("sse", cap=CAP)
    pool = Http11Pool()
    with ThreadServer(flood, lifespan="off") as server:
        with pytest.raises(MessageTooLargeError, match="max_message_bytes"):
            await _request(server.url, pool)
        assert await anyio.to_thread.run_sync(flood.ended.wait, 30)
    pool.close()
    assert flood.sent < BOUND, f"the server sent {flood.sent} bytes before the client left"
    assert flood.abandoned == 1


async def test_a_content_length_over_the_limit_is_refused_unread() -> None:
    flood = Flood("json", cap=CAP)
    with (
        ThreadServer(flood, lifespan="off") as server,
        pytest.raises(MessageTooLargeError, match=f"Content-Length is {CAP + len(OPEN_RESULT)}"),
    ):
        await _request(server.url)


@pytest.mark.skipif(not available(), reason="httptools is not installed")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_pooled_transport_refuses_a_declared_length_over_the_limit(
    anyio_backend: str,
) -> None:
    flood = Flood("json", cap=CAP)
    pool = Http11Pool()
    request = b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
    with ThreadServer(flood, lifespan="off") as server:
        response = await pool.request("127.0.0.1", server.port, request)
        with pytest.raises(MessageTooLargeError, match=f"{LIMIT} bytes; its Content-Length is"):
            await read_body(response, LIMIT, "tools/call")
        response.close()  # (left unread: its connection closes)
        assert await anyio.to_thread.run_sync(flood.ended.wait, 30)
    pool.close()
    assert flood.abandoned == 1 and flood.sent < BOUND


@pytest.mark.skipif(not available(), reason="httptools is not installed")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_pooled_transport_refuses_an_endless_response_head(anyio_backend: str) -> None:
    # A head that never ends (one header value growing slowly): refused at the head limit.
    sent = 0
    ended = anyio.Event()

    async def endless_head(stream: anyio.abc.SocketStream) -> None:
        nonlocal sent
        try:
            await stream.receive()
            await stream.send(b"HTTP/1.1 200 OK\r\nx-endless: ")
            while sent < CAP:
                await stream.send(b"a" * 16384)
                sent += 16384
                await anyio.sleep(0.002)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            ended.set()
            await stream.aclose()

    pool = Http11Pool()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, endless_head)
        request = b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
        with pytest.raises(httpx.RemoteProtocolError, match="head is larger than 102400 bytes"):
            await pool.request("127.0.0.1", port, request)
        with anyio.fail_after(30):
            await ended.wait()
        tg.cancel_scope.cancel()
    pool.close()
    assert sent < BOUND, f"the server sent {sent} bytes of head before the client left"
