"""The pooled HTTP/1.1 transport (mcpkit.transports.http11) against real sockets.

A small asyncio server on 127.0.0.1 plays the upstream, so each test can make it do the
awkward things real servers do: answer in pieces, stream chunked, end a body by closing,
drop an idle keep-alive connection, stall, or go away mid-answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from mcpkit.transports import http11
from mcpkit.transports.client_base import MessageTooLargeError
from mcpkit.transports.client_http import HttpTransport
from mcpkit.transports.client_http_wire import read_body

pytestmark = pytest.mark.anyio

Handler = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Upstream:
    """Reads requests (head + content-length body) and lets ``handler`` answer; counts
    connections and requests."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.disconnects = 0
        self.server: asyncio.Server | None = None
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                if not await self.handler(body, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.disconnects += 1
            writer.close()


@pytest.fixture
async def upstream_factory() -> AsyncIterator[Callable[[Handler], Awaitable[Upstream]]]:
    started: list[Upstream] = []

    async def start(handler: Handler) -> Upstream:
        upstream = Upstream(handler)
        upstream.server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        upstream.port = upstream.server.sockets[0].getsockname()[1]
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        assert upstream.server is not None
        upstream.server.close()


def json_answer(body: bytes, *, extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + extra
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


async def echo(body: bytes, writer: asyncio.StreamWriter) -> bool:
    writer.write(json_answer(body))
    return True


def post(port: int, body: bytes) -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-length: %d\r\n\r\n"
        % (port, len(body))
        + body
    )


async def body_of(response: http11.PooledResponse, limit: int) -> bytes:
    """The whole body, read by the client's rules (refused past ``limit`` bytes)."""
    try:
        return await read_body(response, limit, "the test request")
    finally:
        response.close()


async def test_keep_alive_connections_are_reused(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    upstream = await upstream_factory(echo)
    pool = http11.Http11Pool()
    for n in range(20):
        response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"%d" % n))
        assert response.status_code == 200
        assert response.headers.first(b"content-type") == b"application/json"
        assert await body_of(response, 1000) == b"%d" % n
    assert upstream.connections == 1
    pool.close()


async def test_concurrent_requests_each_get_their_own_answer(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    async def slow_echo(body: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.01)
        writer.write(json_answer(body))
        return True

    upstream = await upstream_factory(slow_echo)
    pool = http11.Http11Pool()

    async def one(n: int) -> bytes:
        response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"%d" % n))
        return await body_of(response, 1000)

    answers = await asyncio.gather(*(one(n) for n in range(16)))
    assert answers == [b"%d" % n for n in range(16)]
    assert upstream.connections <= 16
    again = await asyncio.gather(*(one(n) for n in range(16)))
    assert again == answers
    assert upstream.connections <= 16  # the second wave reused the first wave's
    pool.close()


async def test_answer_split_across_writes_and_chunked_streaming(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    async def chunked(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        await writer.drain()
        await asyncio.sleep(0.005)
        writer.write(b"transfer-encoding: chunked\r\n\r\n")
        for part in (b"data: one\n\n", b"data: two\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.005)
        writer.write(b"0\r\n\r\n")
        return True

    upstream = await upstream_factory(chunked)
    pool = http11.Http11Pool()
    for _ in range(2):
        response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"x"))
        assert response.headers.first(b"content-type") == b"text/event-stream"
        received = [chunk async for chunk in response.aiter_bytes()]
        assert b"".join(received) == b"data: one\n\ndata: two\n\n"
    assert upstream.connections == 1  # a chunked body read to its end: reusable
    pool.close()


async def test_chunks_that_arrive_while_the_reader_is_away_are_all_read(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """The reader takes the first chunk and awaits something else (a relay to the front)
    while the rest of the body and its end arrive: the rest is still read, not dropped
    with the connection handed back to the pool."""
    go = asyncio.Event()

    async def in_two_parts(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\nb\r\ndata: one\n\n\r\n"
        )
        await go.wait()
        writer.write(b"b\r\ndata: two\n\n\r\n0\r\n\r\n")
        return True

    upstream = await upstream_factory(in_two_parts)
    pool = http11.Http11Pool()
    response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"x"))
    received = []
    async for chunk in response.aiter_bytes():
        received.append(chunk)
        if chunk.startswith(b"data: one"):
            go.set()
            while not response._conn.complete:  # the rest and the end come meanwhile
                await asyncio.sleep(0.005)
    assert b"".join(received) == b"data: one\n\ndata: two\n\n"
    pool.close()


async def test_an_interim_answer_is_skipped(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """A 1xx answer before the real one is not the response, and the connection stays
    reusable after it."""

    async def continue_first(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 100 Continue\r\nx-interim: 1\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.005)
        writer.write(json_answer(body))
        return True

    upstream = await upstream_factory(continue_first)
    pool = http11.Http11Pool()
    for n in range(2):
        response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"%d" % n))
        assert (response.status_code, response.headers.first(b"x-interim")) == (200, None)
        assert await body_of(response, 1000) == b"%d" % n
    assert upstream.connections == 1
    pool.close()


async def test_body_delimited_by_close(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    async def close_delimited(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n" + body)
        await writer.drain()
        return False  # close: that ends the body

    upstream = await upstream_factory(close_delimited)
    pool = http11.Http11Pool()
    response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"[1,2]"))
    assert await body_of(response, 1000) == b"[1,2]"
    response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"[3]"))
    assert await body_of(response, 1000) == b"[3]"
    assert upstream.connections == 2  # never reused
    pool.close()


async def test_connection_closed_while_idle_is_replaced_without_error(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    async def answer_then_close(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(json_answer(body))  # announces keep-alive...
        await writer.drain()
        return False  # ...then closes, as a server's idle timeout does

    upstream = await upstream_factory(answer_then_close)
    pool = http11.Http11Pool()
    for n in range(3):
        response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"%d" % n))
        assert await body_of(response, 1000) == b"%d" % n
        await asyncio.sleep(0.02)  # let the close arrive
    assert upstream.connections == 3
    assert len(upstream.requests) == 3  # each request reached the server exactly once
    pool.close()


async def test_stale_connection_with_unseen_close_is_retried_once(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """The race a readability probe cannot close either: the server drops the idle
    connection just as we reuse it.  It never saw the request, so it is sent again."""
    first = True

    async def drop_second(body: bytes, writer: asyncio.StreamWriter) -> bool:
        nonlocal first
        if first:
            first = False
            writer.write(json_answer(body))
            return True
        return False  # close without answering the request on the reused connection

    upstream = await upstream_factory(drop_second)
    pool = http11.Http11Pool()
    response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"1"))
    assert await body_of(response, 100) == b"1"
    # the second request goes out on the reused connection, is dropped unanswered, and
    # is retried on a fresh one, which (a new connection: `first` is gone) also drops it
    with pytest.raises(httpx.RemoteProtocolError):
        await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"2"))
    assert upstream.connections == 2  # exactly one retry, no more
    pool.close()


async def test_abandoned_response_closes_the_connection(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    async def endless(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )

        async def stream() -> None:
            while not writer.is_closing():
                writer.write(b"8\r\ndata: x\n\r\n")
                await asyncio.sleep(0.005)

        tasks.append(asyncio.ensure_future(stream()))
        return True  # back to reading: the client's close shows up there as EOF

    tasks: list[asyncio.Future[None]] = []
    upstream = await upstream_factory(endless)
    pool = http11.Http11Pool()
    response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"x"))
    async for chunk in response.aiter_bytes():
        assert chunk
        break
    response.close()  # cancelling a modern request = closing its stream
    for _ in range(100):
        if upstream.disconnects:
            break
        await asyncio.sleep(0.01)
    assert upstream.disconnects == 1
    pool.close()


async def test_cancelled_request_closes_the_connection(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    async def never(body: bytes, writer: asyncio.StreamWriter) -> bool:
        return True  # no answer; back to reading, where the client's close shows

    upstream = await upstream_factory(never)
    pool = http11.Http11Pool()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"x"))
    for _ in range(100):  # the connection was closed, not pooled: the server sees it go
        if upstream.disconnects:
            break
        await asyncio.sleep(0.01)
    assert upstream.disconnects == 1
    pool.close()


async def test_deadline_and_size_limit(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    async def stall(body: bytes, writer: asyncio.StreamWriter) -> bool:
        if body == b"big":
            writer.write(json_answer(b"x" * 5000))
            return True
        await asyncio.sleep(5)
        return True

    upstream = await upstream_factory(stall)
    pool = http11.Http11Pool()
    response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"big"))
    with pytest.raises(MessageTooLargeError, match="larger than max_message_bytes"):
        await body_of(response, 1000)
    with pytest.raises(http11.DeadlineExceeded):
        await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"slow"), deadline=0.05)
    pool.close()


async def test_a_deadline_passed_while_the_reader_is_away_is_the_deadline(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """The deadline passes while the reader of a streamed body is busy elsewhere: when it
    comes back it gets ``DeadlineExceeded``, not a dropped connection (the connection
    was closed by the deadline, not by the server)."""

    async def first_event_then_stall(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\nb\r\ndata: one\n\n\r\n"
        )
        return True  # back to reading: nothing more comes

    upstream = await upstream_factory(first_event_then_stall)
    pool = http11.Http11Pool()
    data = post(upstream.port, b"x")
    response = await pool.request("127.0.0.1", upstream.port, data, deadline=0.1)
    with pytest.raises(http11.DeadlineExceeded, match=r"no answer within 0\.1s"):
        async for _ in response.aiter_bytes():
            while not response._conn.closed:  # away until the deadline has closed it
                await asyncio.sleep(0.01)
    pool.close()


async def test_refused_connection_and_garbage_answers(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    pool = http11.Http11Pool()
    upstream = await upstream_factory(echo)
    assert upstream.server is not None
    port = upstream.port
    upstream.server.close()
    await upstream.server.wait_closed()
    with pytest.raises(httpx.ConnectError):
        await pool.request("127.0.0.1", port, post(port, b"x"))

    async def garbage(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        return True

    bad = await upstream_factory(garbage)
    with pytest.raises(httpx.RemoteProtocolError):
        await pool.request("127.0.0.1", bad.port, post(bad.port, b"x"))
    pool.close()


async def test_max_connections_bounds_the_connections_in_use(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """Requests beyond ``max_connections`` wait their turn in order; a waiter cancelled
    before its turn, or just as a slot is handed to it, leaves no slot lost."""
    release = asyncio.Event()
    in_flight = [0, 0]  # now, most at once

    async def held(body: bytes, writer: asyncio.StreamWriter) -> bool:
        in_flight[0] += 1
        in_flight[1] = max(in_flight)
        await release.wait()
        in_flight[0] -= 1
        writer.write(json_answer(body))
        return True

    upstream = await upstream_factory(held)
    pool = http11.Http11Pool(max_connections=2)

    async def one(n: int) -> bytes:
        response = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"%d" % n))
        return await body_of(response, 1000)

    first = [asyncio.create_task(one(n)) for n in range(5)]
    cancelled = asyncio.create_task(one(99))
    while len(upstream.requests) < 2:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert len(upstream.requests) == 2  # the other four wait for a slot
    cancelled.cancel()
    release.set()
    assert await asyncio.gather(*first) == [b"%d" % n for n in range(5)]
    assert in_flight[1] == 2
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    # Every slot came back: two more at once still go through, on the kept connections.
    assert list(await asyncio.gather(one(7), one(8))) == [b"7", b"8"]
    assert upstream.connections == 2
    pool.close()


async def test_a_waiter_cancelled_as_its_slot_is_released_leaves_no_slot_lost(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """A request cancelled while it waits for a slot, the slot released in the same step
    (before the cancelled request runs again), ends with its cancellation, and the slot
    serves the next request."""

    async def answer(body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(json_answer(body))
        return True

    upstream = await upstream_factory(answer)
    pool = http11.Http11Pool(max_connections=1)
    held = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"1"))
    waiting = asyncio.create_task(
        pool.request("127.0.0.1", upstream.port, post(upstream.port, b"2"))
    )
    await asyncio.sleep(0)  # its first step: it waits for the one slot
    waiting.cancel()
    held.close()  # the slot is released before the cancelled wait ends
    with pytest.raises(asyncio.CancelledError):
        await waiting
    again = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"3"))
    assert await body_of(again, 100) == b"3"
    pool.close()


async def test_a_wait_for_a_free_connection_ends_at_the_deadline(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """The request's one deadline covers its wait for a slot: past it the wait ends with
    ``DeadlineExceeded``, and the slot it never got is not lost."""
    release = asyncio.Event()

    async def held(body: bytes, writer: asyncio.StreamWriter) -> bool:
        await release.wait()
        writer.write(json_answer(body))
        return True

    upstream = await upstream_factory(held)
    pool = http11.Http11Pool(max_connections=1)
    first = asyncio.create_task(pool.request("127.0.0.1", upstream.port, post(upstream.port, b"1")))
    while not upstream.requests:
        await asyncio.sleep(0.01)
    with pytest.raises(http11.DeadlineExceeded, match=r"no connection free within 0\.1s"):
        await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"2"), deadline=0.1)
    release.set()
    assert await body_of(await first, 100) == b"1"
    again = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"3"))
    assert await body_of(again, 100) == b"3"
    pool.close()


async def test_the_client_transport_posts_over_the_pool(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """``HttpTransport`` given a pool: its POSTs (a legacy session's here) are written
    on the pool's keep-alive connection, with the client's headers and nothing of
    httpx's, and the answers are read by the client's rules; other methods (the
    session's DELETE) take httpx."""

    async def legacy(body: bytes, writer: asyncio.StreamWriter) -> bool:
        message = json.loads(body or b"{}")  # (the session's DELETE has no body)
        if "id" not in message:
            writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            return True
        result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {}}
        if message["method"] != "initialize":
            result = {"echo": message["method"]}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        writer.write(json_answer(answer.encode(), extra=b"mcp-session-id: s1\r\n"))
        return True

    upstream = await upstream_factory(legacy)
    pool = http11.Http11Pool()
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    headers = {"X-Team": "a", "X-Share": "50%"}
    transport = HttpTransport(url, headers=headers, pool=pool, legacy_get_stream=False)
    async with transport:
        await transport.request("initialize", {"protocolVersion": "2025-11-25"}, timeout=5)
        assert transport.session_id == "s1"
        assert await transport.request("tools/list", {}, timeout=5) == {"echo": "tools/list"}
        with pytest.raises(ValueError, match="'X-A' cannot be sent"):  # nothing written
            await transport.request("ping", {}, timeout=5, headers={"X-A": "1\r\nX-B: 2"})
    pool.close()
    posts = [r.lower() for r in upstream.requests if r.startswith(b"POST")]
    assert len(posts) == 2  # initialize, tools/list
    assert all(b"python-httpx" not in post for post in posts)
    assert b"mcp-session-id: s1\r\n" in posts[1] and b"x-share: 50%\r\n" in posts[1]
    (delete,) = [r for r in upstream.requests if r.startswith(b"DELETE")]
    assert b"python-httpx" in delete
    assert upstream.connections == 2  # the POSTs' one, and httpx's


async def test_a_close_after_the_end_leaves_the_next_request_alone(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """A holder that read its body to the end and closes the response later (the usual
    ``try/finally``) does not touch the request that got the connection meanwhile, nor
    does a second close."""
    upstream = await upstream_factory(echo)
    pool = http11.Http11Pool()
    first = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"1"))
    assert await read_body(first, 100, "the first request") == b"1"  # back in the pool
    second = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"2"))
    first.close()  # late: the connection now serves the second request
    assert await body_of(second, 100) == b"2"
    third = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"3"))
    second.close()  # a second close
    assert await body_of(third, 100) == b"3"
    assert upstream.connections == 1  # one connection served them all
    pool.close()


async def test_a_close_after_a_body_read_at_once_leaves_the_next_request_alone(
    upstream_factory: Callable[[Handler], Awaitable[Upstream]],
) -> None:
    """The same after :meth:`read_now`: the body returned, the connection serves the next
    request, and the first response's late close touches nothing."""
    upstream = await upstream_factory(echo)
    pool = http11.Http11Pool()
    first = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"1"))
    while (body := first.read_now(100)) is None:  # (until the body is here whole)
        await asyncio.sleep(0.005)
    assert body == b"1"
    second = await pool.request("127.0.0.1", upstream.port, post(upstream.port, b"2"))
    first.close()  # late: the connection now serves the second request
    assert first.read_now(100) is None  # and its own body was taken already
    assert await body_of(second, 100) == b"2"
    assert upstream.connections == 1
    pool.close()
