"""One scenario, every transport and era, the same results.

The ``mcp_client`` fixture comes from mcpkit's pytest plugin (entry point ``pytest11``,
so this file also shows the plugin loads from an installed mcpkit); it is parametrized
here over ``memory`` (``Client(server)``), ``stdio`` (``mcpkit serve`` in a child process)
and ``http`` (the same object behind a real uvicorn socket on 127.0.0.1), times the two
eras.  The scenario records what a user of the client sees, normalized only where eras
legitimately differ (modern results carry ``resultType`` and ``_meta``), and every run
must produce the same transcript; each result is also checked against the official
schema of the era it came over.
"""

from __future__ import annotations

from typing import Any

import pytest
import scenario_server
from scenario_server import Forecast, Point, Sum

from mcpkit.client import Client, ToolError
from mcpkit.testing import TRANSPORTS, ScriptedResponder, assert_valid_result

pytestmark = pytest.mark.anyio

EXPECTED: dict[str, Any] = {
    "tools": ["add", "count", "countdown", "divide", "forecast", "greet", "midpoint"],
    "add": {"data": {"sum": 5.5}, "typed": {"sum": 5.5}},
    "midpoint": Point(2, 3),
    "forecast": Forecast(city="Oslo", celsius=[4.0, 20.5, -1.0]),
    "count": 5,
    "count_raw": {"result": 5},
    "divide_ok": {"text": "2.5", "data": None},
    "divide_error": "tool 'divide' failed: cannot divide by zero",
    "greet": "Hello, Ada! You are wonderful.",
    "asked": [("elicitation", "Your name?"), ("sampling", "Compliment Ada")],
    "progress": [1.0, 2.0, 3.0],
    "countdown": "liftoff",
    "note": "Remember to hydrate.",
    "prompt": "Summarize: MCP",
}


@pytest.fixture
def mcp_server() -> Any:
    return scenario_server.server


@pytest.fixture
def responder() -> ScriptedResponder:
    return ScriptedResponder(elicitation=[{"name": "Ada"}], sampling=["You are wonderful."])


@pytest.fixture
def mcp_client_options(responder: ScriptedResponder) -> dict[str, Any]:
    return responder.callbacks()


def _text(result: Any) -> str:
    return "".join(b.get("text", "") for b in result["content"] if b.get("type") == "text")


async def run_scenario(client: Client, responder: ScriptedResponder) -> dict[str, Any]:
    revision = client.protocol_version
    seen: dict[str, Any] = {}

    tools = await client.list_tools()
    seen["tools"] = sorted(tool["name"] for tool in tools)

    add = await client.call_tool("add", {"a": 2, "b": 3.5}, result_type=Sum)
    assert_valid_result("tools/call", dict(add), revision)
    seen["add"] = {
        "data": add.data,
        "typed": (await client.call_tool("add", {"a": 2, "b": 3.5})).data,
    }
    seen["midpoint"] = (
        await client.call_tool("midpoint", {"x1": 0, "y1": 0, "x2": 4, "y2": 6}, result_type=Point)
    ).data
    seen["forecast"] = (
        await client.call_tool("forecast", {"city": "Oslo"}, result_type=Forecast)
    ).data
    count = await client.call_tool("count", {"word": "hello"}, result_type=int)
    seen["count"], seen["count_raw"] = count.data, count["structuredContent"]

    ok = await client.call_tool("divide", {"a": 5, "b": 2})
    seen["divide_ok"] = {"text": _text(ok), "data": ok.data}
    failed = await client.call_tool("divide", {"a": 1, "b": 0})
    assert failed.is_error and "zero" in _text(failed)
    assert_valid_result("tools/call", dict(failed), revision)
    with pytest.raises(ToolError) as raised:
        await client.call_tool("divide", {"a": 1, "b": 0}, raise_on_error=True)
    assert raised.value.content == failed["content"]
    seen["divide_error"] = str(raised.value)

    greet = await client.call_tool("greet")
    assert_valid_result("tools/call", dict(greet), revision)
    seen["greet"] = _text(greet)
    seen["asked"] = [
        (kind, params.get("message") or params["messages"][-1]["content"]["text"])
        for kind, params in responder.requests
    ]
    responder.assert_done()

    progress: list[float] = []
    done = await client.call_tool(
        "countdown", {"n": 3}, on_progress=lambda p: progress.append(p["progress"])
    )
    seen["progress"], seen["countdown"] = progress, _text(done)

    read = await client.read_resource("note://today")
    assert_valid_result("resources/read", read, revision)
    seen["note"] = read["contents"][0]["text"]
    prompt = await client.get_prompt("summarize", {"text": "MCP"})
    assert_valid_result("prompts/get", prompt, revision)
    seen["prompt"] = prompt["messages"][0]["content"]["text"]
    return seen


@pytest.mark.parametrize("mcp_era", ["modern", "legacy"])
@pytest.mark.parametrize("mcp_transport", TRANSPORTS)
async def test_same_scenario_same_results(
    mcp_client: Client, mcp_transport: str, mcp_era: str, responder: ScriptedResponder
) -> None:
    assert mcp_client.era == mcp_era
    assert mcp_client.transport.kind == mcp_transport
    seen = await run_scenario(mcp_client, responder)
    assert seen == EXPECTED


async def test_the_plugin_defaults_to_memory_and_auto(mcp_client: Client) -> None:
    assert mcp_client.transport.kind == "memory"
    assert mcp_client.era == "modern"  # auto probed a dual-era server
