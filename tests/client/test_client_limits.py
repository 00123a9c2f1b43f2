"""A server that sends one endless message: the client stops at ``max_message_bytes``.

The server is a real mcpkit server on uvicorn behind :class:`support.flood.Flood`, which
answers a ``tools/call`` of ``flood`` with an SSE ``data:`` line (or, for HTTP+SSE, a
``message`` event) that it keeps extending in chunks and never finishes, recording how
much it sent.  The client measures while it reads: it gives up after about its limit,
closes the connection (the server sees that), and says which limit it hit.
"""

from __future__ import annotations

import anyio
import pytest

from mcpkit.client import Client, ClientError
from mcpkit.transports.client_base import MessageTooLargeError
from mcpkit.transports.client_http import HttpTransport
from mcpkit.transports.client_sse import SseTransport
from mcpkit.types.versions import EraChoice
from support.flood import Flood, flooded_upstream
from support.servers import ThreadServer

pytestmark = pytest.mark.anyio

LIMIT = 1024 * 1024
CAP = 32 * LIMIT
BOUND = 10 * LIMIT


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_an_endless_tool_answer_fails_the_call_and_the_client_goes_on(era: EraChoice) -> None:
    flood = Flood("sse", cap=CAP, inner=flooded_upstream())
    with ThreadServer(flood, lifespan="on") as server:
        transport = HttpTransport(server.url, max_message_bytes=LIMIT)
        async with Client(transport, era=era) as client:
            with pytest.raises(ClientError) as info:
                await client.call_tool("flood")
            assert await anyio.to_thread.run_sync(flood.ended.wait, 30)
            # the same client keeps working after the abandoned stream
            answer = await client.call_tool("hello", {"name": "after"})
            assert answer["content"][0]["text"] == "hello after"
    assert flood.sent < BOUND, f"the server sent {flood.sent} bytes before the client left"
    assert flood.abandoned == 1
    assert isinstance(info.value, MessageTooLargeError), repr(info.value)
    assert f"max_message_bytes ({LIMIT} bytes)" in str(info.value)
    assert "tools/call" in str(info.value)


async def test_an_endless_http_sse_event_ends_the_connection_naming_the_limit() -> None:
    flood = Flood("legacy-sse", cap=CAP)
    with ThreadServer(flood, lifespan="off") as server:
        transport = SseTransport(server.url, max_message_bytes=LIMIT, connect_timeout=30)
        with pytest.raises(ClientError) as info:
            async with Client(transport, era="legacy", timeout=60):
                pass
        assert await anyio.to_thread.run_sync(flood.ended.wait, 30)
    assert flood.sent < BOUND, f"the server sent {flood.sent} bytes before the client left"
    assert flood.abandoned == 1
    assert f"max_message_bytes ({LIMIT} bytes)" in str(info.value)
