"""Structured output without the double: ``mirror_structured=False`` (per tool, or
``Server(mirror_structured=False)``) leaves the JSON text copy of ``structuredContent``
out of ``content``; the default keeps the spec's backward-compatible mirror.  Both eras,
in memory, every result checked against the official schema of its revision."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.server import ToolResult
from support.schema import validate_definition

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]
REVISION = {"modern": "2026-07-28", "legacy": "2025-11-25"}


class Sum(TypedDict):
    total: int


def make_server(**server_options: Any) -> Server:
    server = Server("mirror", **server_options)

    @server.tool
    def mirrored(a: int, b: int) -> Sum:
        return {"total": a + b}

    @server.tool(mirror_structured=False)
    def single(a: int, b: int) -> Sum:
        return {"total": a + b}

    @server.tool(mirror_structured=True)
    def always(a: int, b: int) -> Sum:
        return {"total": a + b}

    @server.tool(mirror_structured=False)
    def wrapped() -> ToolResult:
        return ToolResult(structured={"total": 7})

    @server.tool(mirror_structured=False, structured_output=True)
    def primitive() -> int:
        return 3

    return server


async def call(client: Client, name: str, era: str, **arguments: int) -> dict[str, Any]:
    result = await client.request("tools/call", {"name": name, "arguments": arguments})
    validate_definition(
        REVISION[era], "CallToolResult", {k: v for k, v in result.items() if k != "_meta"}
    )
    return result


@pytest.mark.parametrize("era", ERAS)
async def test_default_mirrors_and_the_option_leaves_the_copy_out(era: str) -> None:
    async with Client(make_server(), era=era) as client:  # type: ignore[arg-type]
        mirrored = await call(client, "mirrored", era, a=1, b=2)
        single = await call(client, "single", era, a=1, b=2)
        wrapped = await call(client, "wrapped", era)
        primitive = await call(client, "primitive", era)
        typed = await client.call_tool("single", {"a": 2, "b": 2}, result_type=Sum)
    assert mirrored["content"] == [{"type": "text", "text": '{"total":3}'}]
    assert mirrored["structuredContent"] == {"total": 3}
    assert single["content"] == [] and single["structuredContent"] == {"total": 3}
    assert wrapped["content"] == [] and wrapped["structuredContent"] == {"total": 7}
    assert primitive["content"] == [] and primitive["structuredContent"] == {"result": 3}
    assert typed.data == {"total": 4}


@pytest.mark.parametrize("era", ERAS)
async def test_server_wide_choice_and_per_tool_override(era: str) -> None:
    async with Client(make_server(mirror_structured=False), era=era) as client:  # type: ignore[arg-type]
        mirrored = await call(client, "mirrored", era, a=1, b=1)
        always = await call(client, "always", era, a=1, b=1)
    assert mirrored["content"] == [] and mirrored["structuredContent"] == {"total": 2}
    assert always["content"] == [{"type": "text", "text": '{"total":2}'}]
