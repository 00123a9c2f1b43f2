"""One ``Server`` object served under asyncio, then under trio (a test suite parametrized
over both backends does this): the second loop gets its own lifespan lock."""

from __future__ import annotations

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client


def test_a_server_object_serves_on_asyncio_then_trio() -> None:
    pytest.importorskip("trio")
    server = Server("twice")
    entered: list[str] = []

    @server.tool
    async def hello() -> str:
        return "hello"

    async def main(backend: str) -> None:
        for era in ("modern", "legacy"):
            async with Client(server, era=era) as client:
                result = await client.call_tool("hello")
            assert result["content"][0]["text"] == "hello"
        entered.append(backend)

    anyio.run(main, "asyncio", backend="asyncio")
    anyio.run(main, "trio", backend="trio")
    anyio.run(main, "asyncio", backend="asyncio")
    assert entered == ["asyncio", "trio", "asyncio"]
