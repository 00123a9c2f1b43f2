"""Reading a POST body in the ASGI app (in-process, no socket): a body that is there at once,
one that arrives in pieces within the deadline, one that is too slow (408), too large (413)
and a client that leaves mid-body."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from starlette.types import Message

from mcpkit import Server
from mcpkit.transports.http import HttpOptions, McpHttpApp
from support.mcp import modern_headers, modern_request


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_app(**options: Any) -> McpHttpApp:
    server = Server("body")
    server.state = "memory:"

    @server.tool
    def echo(text: str) -> str:
        return text

    return McpHttpApp(server, HttpOptions(**options))


def scope_for(message: dict[str, Any], body: bytes) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in modern_headers(message).items()]
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}


async def post(app: McpHttpApp, pieces: list[tuple[float, bytes]], gone: bool = False) -> Any:
    """POST the body in ``pieces`` (delay before each, bytes); the status and body sent."""
    message = modern_request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    body = b"".join(piece for _, piece in pieces)
    queue = list(pieces)
    sent: list[Message] = []

    async def receive() -> dict[str, Any]:
        if not queue:
            await anyio.sleep(3600)
        delay, piece = queue.pop(0)
        if delay:
            await anyio.sleep(delay)
        if gone and not queue:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": piece, "more_body": bool(queue)}

    async def send(event: Message) -> None:
        sent.append(event)

    async with app.lifespan_context():
        await app(scope_for(message, body), receive, send)
    if not sent:
        return None, None
    return sent[0]["status"], b"".join(e.get("body", b"") for e in sent[1:])


def split(delays: list[float]) -> list[tuple[float, bytes]]:
    message = modern_request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    body = json.dumps(message).encode()
    step = -(-len(body) // len(delays))
    return [(d, body[i * step : (i + 1) * step]) for i, d in enumerate(delays)]


@pytest.mark.anyio
async def test_a_body_that_is_there_at_once() -> None:
    status, body = await post(make_app(), split([0]))
    assert status == 200 and b'"hi"' in body


@pytest.mark.anyio
async def test_a_body_in_pieces_within_the_deadline() -> None:
    status, body = await post(make_app(body_timeout_s=5), split([0, 0.01, 0.01]))
    assert status == 200 and b'"hi"' in body


@pytest.mark.anyio
async def test_a_body_that_waits_for_its_first_piece() -> None:
    status, body = await post(make_app(body_timeout_s=5), split([0.01, 0]))
    assert status == 200 and b'"hi"' in body


@pytest.mark.anyio
async def test_a_slow_body_gets_408_and_close() -> None:
    app = make_app(body_timeout_s=0.05)
    with anyio.fail_after(5):
        status, body = await post(app, split([0, 1.0]))
    assert status == 408 and b"Request Timeout" in body


@pytest.mark.anyio
async def test_a_large_body_gets_413() -> None:
    status, _ = await post(make_app(max_body_bytes=50), split([0, 0]))
    assert status == 413


@pytest.mark.anyio
async def test_a_client_leaving_mid_body_gets_nothing() -> None:
    status, _ = await post(make_app(body_timeout_s=5), split([0, 0.01]), gone=True)
    assert status is None
