"""The request-head guard of ``mcpkit serve --http`` (``GuardedHttpTools`` and
``GuardedH11``), driven in-process with a fake transport: the header deadline and the 431
limits hold under both parsers, whether a head arrives in one read or byte by byte, and a
head that arrives whole arms no timer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("httptools")

from uvicorn.server import ServerState

from mcpkit.transports.http import server as http_server

BODY = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def request(extra: bytes = b"", target: bytes = b"/mcp") -> bytes:
    return (
        b"POST "
        + target
        + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + extra
        + b"Content-Length: %d\r\n\r\n" % len(BODY)
        + BODY
    )


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.out = b""
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def write(self, data: Any) -> None:
        self.out += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def connect(timeout: float = 10.0, http: str = "httptools") -> tuple[Any, FakeTransport]:
    guarded = http_server.protocol_classes()[http]
    config = http_server.uvicorn_config(app, "127.0.0.1", 8000, lifespan="off", http=guarded)
    config.load()
    protocol = config.http(config=config, server_state=ServerState(), app_state={})
    protocol.header_timeout = timeout
    transport = FakeTransport()
    protocol.connection_made(transport)
    return protocol, transport


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_head_in_one_read_is_served_and_leaves_no_timer() -> None:
    protocol, transport = connect()
    assert protocol._deadline is not None  # armed on connect, for the first head
    protocol.data_received(request())
    assert protocol._deadline is None
    await settle()
    assert transport.out.startswith(b"HTTP/1.1 200")
    transport.out = b""
    protocol.data_received(request() + request())  # pipelined
    assert protocol._deadline is None
    await settle()
    assert transport.out.count(b"HTTP/1.1 200") == 2
    assert not transport.closed


@pytest.mark.anyio
async def test_a_head_in_pieces_is_served_and_its_timer_disarmed() -> None:
    protocol, transport = connect()
    protocol.data_received(request())
    await settle()
    transport.out = b""
    data = request(b"X-Pad: " + b"p" * 6000 + b"\r\n")
    protocol.data_received(data[:20])
    assert protocol._deadline is not None  # incomplete head: the deadline runs
    for i in range(20, len(data), 500):
        protocol.data_received(data[i : i + 500])
    assert protocol._deadline is None
    await settle()
    assert transport.out.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("http", ["httptools", "h11"])
@pytest.mark.anyio
async def test_a_dawdling_head_is_closed_at_the_deadline(http: str) -> None:
    # The second request of a kept-alive connection: its head has a deadline of its own.
    protocol, transport = connect(timeout=0.05, http=http)
    protocol.data_received(request())  # the first request is fine
    await settle()
    assert transport.out.startswith(b"HTTP/1.1 200")
    protocol.data_received(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
    assert protocol._deadline is not None  # armed for this head
    deadline = protocol._deadline.when()
    for _ in range(3):  # each byte that trickles in leaves the deadline where it is
        protocol.data_received(b"a")
        await asyncio.sleep(0)
        assert protocol._deadline is not None and protocol._deadline.when() == deadline
    assert not transport.closed
    await asyncio.sleep(0.1)  # (a timer due earlier runs first)
    assert transport.closed


@pytest.mark.parametrize("http", ["httptools", "h11"])
@pytest.mark.anyio
async def test_a_silent_connection_is_closed_at_the_deadline(http: str) -> None:
    _, transport = connect(timeout=0.05, http=http)
    await asyncio.sleep(0.1)
    assert transport.closed


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(b"X-Big: " + b"a" * 9000 + b"\r\n", id="value-over-8KiB"),
        pytest.param(b"X-Big: " + b"a" * 20000 + b"\r\n", id="value-over-16KiB"),
        pytest.param(b"".join(b"X-H%d: v\r\n" % i for i in range(101)), id="101-fields"),
        pytest.param(b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 4000) for i in range(5)), id="20KiB"),
    ],
)
@pytest.mark.parametrize("piece", [None, 1000])
@pytest.mark.parametrize("http", ["httptools", "h11"])
@pytest.mark.anyio
async def test_an_oversized_head_gets_431_and_a_close(
    extra: bytes, piece: int | None, http: str
) -> None:
    protocol, transport = connect(http=http)
    data = request(extra)
    step = piece or len(data)
    for i in range(0, len(data), step):
        if transport.closed:
            break
        protocol.data_received(data[i : i + step])
    await settle()
    assert transport.out.startswith(b"HTTP/1.1 431"), transport.out[:100]
    assert transport.closed


@pytest.mark.parametrize("http", ["httptools", "h11"])
@pytest.mark.anyio
async def test_an_oversized_target_gets_431(http: str) -> None:
    protocol, transport = connect(http=http)
    protocol.data_received(request(target=b"/mcp?" + b"q" * 17000))
    await settle()
    assert transport.out.startswith(b"HTTP/1.1 431")


@pytest.mark.parametrize("piece", [None, 700])
@pytest.mark.parametrize("http", ["httptools", "h11"])
@pytest.mark.anyio
async def test_a_large_head_within_the_limits_is_served(piece: int | None, http: str) -> None:
    extra = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 1500) for i in range(8)) + b"".join(
        b"X-F%d: v\r\n" % i for i in range(80)
    )
    protocol, transport = connect(http=http)
    data = request(extra)
    step = piece or len(data)
    for i in range(0, len(data), step):
        protocol.data_received(data[i : i + step])
    await settle()
    assert transport.out.startswith(b"HTTP/1.1 200"), transport.out[:100]
