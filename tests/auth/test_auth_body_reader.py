"""The one ASGI body loop (``mcpkit.asgi.read_chunks``) and what each of its two callers
makes of it: the Streamable HTTP app refuses an oversized ``Content-Length`` before it
reads, and the OAuth guard answers 413 for a body that grows too large and nothing at all
for a client that leaves (in process, no socket)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

from mcpkit.asgi import BodyTooLarge, ClientGone, read_chunks
from mcpkit.auth import BearerAuth, Principal
from mcpkit.auth.resource_server import ProtectedResource
from mcpkit.transports.http.asgi import read_body_now

Event = MutableMapping[str, Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Feed:
    """An ASGI ``receive`` that hands out ``events`` in order and counts the calls."""

    def __init__(self, *events: Event) -> None:
        self.events = list(events)
        self.calls = 0

    async def __call__(self) -> Event:
        self.calls += 1
        return self.events.pop(0)


def part(body: bytes, more: bool = True) -> Event:
    return {"type": "http.request", "body": body, "more_body": more}


GONE: Event = {"type": "http.disconnect"}


@pytest.mark.anyio
async def test_chunks_come_back_in_order_without_empty_ones() -> None:
    feed = Feed(part(b"ab"), part(b""), part(b"cd", more=False))
    assert await read_chunks(feed, 4) == [b"ab", b"cd"]


@pytest.mark.anyio
async def test_whichever_comes_first_is_raised() -> None:
    with pytest.raises(ClientGone):
        await read_chunks(Feed(part(b"ab"), GONE), 3)
    too_much = Feed(part(b"ab"), part(b"cd"), GONE)
    with pytest.raises(BodyTooLarge):
        await read_chunks(too_much, 3)
    assert too_much.events == [GONE]  # refused as soon as it grew, the rest unread


@pytest.mark.anyio
async def test_the_app_refuses_a_declared_length_before_reading() -> None:
    feed = Feed(GONE)
    with pytest.raises(BodyTooLarge):
        await read_body_now(feed, 3, "4", None)
    assert feed.calls == 0
    assert await read_body_now(Feed(part(b"abc", more=False)), 3, "3", None) == b"abc"


class Anyone:
    async def verify(self, token: str) -> Principal:
        return Principal(subject="someone", scopes=frozenset({"mcp"}))


async def guarded_post(*events: Event) -> tuple[list[Event], bool]:
    """POST through the guard with a tool scope to check: what it sent, and whether the
    app behind it was reached."""
    reached = False

    async def app(scope: Event, receive: Any, send: Any) -> None:
        nonlocal reached
        reached = True

    auth = BearerAuth(
        Anyone(),
        resource="http://127.0.0.1:8000/mcp",
        authorization_servers=["http://127.0.0.1:9000"],
        tool_scopes={"admin": ["admin"]},
    )
    guard = ProtectedResource(app, auth, max_body_bytes=3)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"authorization", b"Bearer t")],
    }
    sent: list[Event] = []

    async def send(event: Event) -> None:
        sent.append(event)

    await guard(scope, Feed(*events), send)
    return sent, reached


@pytest.mark.anyio
async def test_the_guard_answers_413_for_a_body_that_grows_too_large() -> None:
    sent, reached = await guarded_post(part(b"ab"), part(b"cd"), GONE)
    assert sent[0]["status"] == 413 and not reached


@pytest.mark.anyio
async def test_the_guard_ends_quietly_when_the_client_leaves_mid_body() -> None:
    sent, reached = await guarded_post(part(b"ab"), GONE)
    assert sent == [] and not reached
