"""Tool search over a large catalog: the list shrinks to the pinned tools plus
``search_tools``/``call_tool``, BM25 and regex find the right tool (own, mounted and
transformed alike), ``call_tool`` reaches it with its arguments, and input requests still
work through it, on both eras."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Server
from mcpkit.client import Client, ElicitResult
from mcpkit.server import Context
from mcpkit.types.versions import EraChoice
from support.inproc import call, legacy, modern
from support.mcp import first_text

pytestmark = pytest.mark.anyio
ERAS = ["modern", "legacy"]
TOPICS = ["invoice", "shipment", "ticket", "calendar", "payroll", "inventory", "contract"]
VERBS = ["create", "delete", "archive", "list", "export", "approve"]


def catalog() -> Server:
    """About 300 tools with distinct, realistic names and descriptions."""
    server = Server("big")
    for n in range(7):
        for topic in TOPICS:
            for verb in VERBS:
                name = f"{verb}_{topic}_v{n}"

                def fn(ref: str, _name: str = name) -> str:
                    return f"{_name}({ref})"

                server.tool(
                    fn, name=name, description=f"{verb.title()} a {topic} record (API v{n})."
                )

    @server.tool
    def weather_forecast(city: str) -> str:
        """Tomorrow's weather forecast for a city: temperature, rain and wind."""
        return f"Sunny in {city}"

    @server.tool
    async def confirm_wire_transfer(amount: int, ctx: Context) -> str:
        """Send money abroad after the user confirms."""
        answer = await ctx.elicit(f"Send {amount}?", {"type": "object", "properties": {}})
        return f"wire {amount}: {answer['action']}"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_bm25_search_and_call(era: EraChoice) -> None:
    server = catalog()
    assert len(server.tools) > 290
    server.enable_tool_search(always=["weather_forecast"], max_results=3)

    async def elicit(params: dict[str, Any]) -> ElicitResult:
        return {"action": "accept", "content": {}}

    async with Client(server, era=era, elicitation=elicit) as client:
        names = [t["name"] for t in await client.list_tools()]
        assert names == ["weather_forecast", "search_tools", "call_tool"]
        found = await client.call_tool("search_tools", {"query": "rain and wind tomorrow"})
        assert found["structuredContent"]["tools"][0]["name"] == "weather_forecast"
        found = await client.call_tool("search_tools", {"query": "approve payroll v3"})
        top = found["structuredContent"]["tools"][0]
        assert top["name"] == "approve_payroll_v3"
        assert top["inputSchema"]["required"] == ["ref"]
        done = await client.call_tool(
            "call_tool", {"name": "approve_payroll_v3", "arguments": {"ref": "p-1"}}
        )
        assert first_text(done) == "approve_payroll_v3(p-1)"
        # a found tool can also be called directly
        assert first_text(await client.call_tool("archive_ticket_v1", {"ref": "t"})) == (
            "archive_ticket_v1(t)"
        )
        unknown = await client.call_tool("call_tool", {"name": "nope"})
        assert unknown.get("isError") is True and "Unknown tool" in first_text(unknown)
        # input requests of a tool called through call_tool (MRTR or a legacy request)
        wired = await client.call_tool(
            "call_tool", {"name": "confirm_wire_transfer", "arguments": {"amount": 5}}
        )
        assert first_text(wired) == "wire 5: accept"


@pytest.mark.parametrize("meta", [modern(), legacy()], ids=ERAS)
async def test_regex_search_and_schema(meta: Any) -> None:
    server = catalog()
    server.enable_tool_search(strategy="regex", max_results=50)
    listed = await call(server, "tools/list", {}, meta)  # checked against the MCP schema
    assert [t["name"] for t in listed["tools"]] == ["search_tools", "call_tool"]
    args = {"name": "search_tools", "arguments": {"query": "^export_contract_v[0-2]$"}}
    found = await call(server, "tools/call", args, meta)
    names = [t["name"] for t in found["structuredContent"]["tools"]]
    assert names == ["export_contract_v0", "export_contract_v1", "export_contract_v2"]
    bad = await call(
        server, "tools/call", {"name": "search_tools", "arguments": {"query": "("}}, meta
    )
    assert bad.get("isError") is True and "regular expression" in first_text(bad)


async def test_search_covers_mounted_and_transformed_tools() -> None:
    main = Server("main")
    main.mount(catalog(), namespace="erp")
    main.transform_tool(
        "erp_weather_forecast", new_name="forecast", args={"city": {"name": "place"}}
    )
    main.enable_tool_search(strategy="bm25", max_results=1)
    async with Client(main) as client:
        found = await client.call_tool("search_tools", {"query": "weather forecast rain"})
        (tool,) = found["structuredContent"]["tools"]
        assert tool["name"] == "forecast"
        assert list(tool["inputSchema"]["properties"]) == ["place"]
        done = await client.call_tool(
            "call_tool", {"name": "forecast", "arguments": {"place": "Oslo"}}
        )
        assert first_text(done) == "Sunny in Oslo"


def test_bad_strategy() -> None:
    with pytest.raises(ValueError, match="strategy"):
        Server("x").enable_tool_search(strategy="vector")
