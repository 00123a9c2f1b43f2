"""Sampling with tools (SEP-1577) on both eras, in process: ``ctx.sample(tools=...,
tool_choice=...)`` sends the tools, is refused without the client's ``sampling.tools``,
and a second round carries the ``tool_result`` of the model's ``tool_use``.

Every request the server sends is checked against the official schema of its revision
(``AnsweringExchange`` on 2025-11-25; the embedded input requests of an
``InputRequiredResult`` on 2026-07-28, checked with the result by ``support.inproc``)."""

from __future__ import annotations

from typing import Any

import pytest
from test_server_mrtr import AnsweringExchange

from mcpkit import Context, Server
from mcpkit.server.sampling import tool_result, tool_results_message, tool_uses
from support.inproc import call, call_error, legacy, modern, text_of
from support.schema import LEGACY, MODERN, validate_definition

pytestmark = pytest.mark.anyio

TOOLS_CAPS: dict[str, Any] = {"sampling": {"tools": {}}}
QUESTION = "What's the weather in Paris?"
USE = {"type": "tool_use", "id": "call-1", "name": "weather", "input": {"city": "Paris"}}
ASKS_TOOL = {"role": "assistant", "content": [USE], "model": "m", "stopReason": "toolUse"}
ANSWERS = {"role": "assistant", "content": {"type": "text", "text": "Sunny"}, "model": "m"}


def make_server() -> Server:
    server = Server("sampler")

    @server.tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @server.tool
    async def agent(ctx: Context) -> str:
        """Lets the client's model use the weather tool, then answers."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": {"type": "text", "text": QUESTION}}
        ]
        first = await ctx.sample(messages, tools=["weather"], tool_choice="auto", max_tokens=50)
        uses = tool_uses(first)
        if not uses:
            return "no tool: " + str(first["content"]["text"])
        results = [tool_result(u["id"], weather(**u["input"])) for u in uses]
        messages += [
            {"role": "assistant", "content": first["content"]},
            tool_results_message(results),
        ]
        final = await ctx.sample(messages, tools=["weather"], max_tokens=50)
        return f"{len(uses)} tool use(s), then: {final['content']['text']}"

    return server


class Scripted(AnsweringExchange):
    """A 2025-11-25 client whose model answers ``sampling/createMessage`` from a script."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        super().__init__({})
        self.script = script

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        self.answers[method] = self.script.pop(0)
        return await super().request(method, params, timeout)


async def test_legacy_rounds_send_tools_and_carry_the_tool_result() -> None:
    exchange = Scripted([ASKS_TOOL, ANSWERS])
    result = await call(
        make_server(), "tools/call", {"name": "agent"}, legacy(TOOLS_CAPS), exchange
    )
    assert text_of(result) == "1 tool use(s), then: Sunny"
    first, second = (r["params"] for r in exchange.requests)
    assert [t["name"] for t in first["tools"]] == ["weather"]
    assert first["tools"][0]["inputSchema"]["properties"]["city"]["type"] == "string"
    assert first["toolChoice"] == {"mode": "auto"}
    [answer] = second["messages"][2]["content"]
    assert answer == {
        "type": "tool_result",
        "toolUseId": "call-1",
        "content": [{"type": "text", "text": "sunny in Paris"}],
    }
    validate_definition(LEGACY, "CreateMessageResult", ASKS_TOOL)


async def test_modern_rounds_send_tools_and_carry_the_tool_result() -> None:
    server = make_server()
    caps = modern(TOOLS_CAPS)
    first = await call(server, "tools/call", {"name": "agent"}, caps)
    [(key, ask)] = first["inputRequests"].items()
    assert ask["method"] == "sampling/createMessage"
    assert ask["params"]["tools"][0]["name"] == "weather"
    assert ask["params"]["toolChoice"] == {"mode": "auto"}
    responses = {key: ASKS_TOOL}
    second = await call(
        server,
        "tools/call",
        {"name": "agent", "inputResponses": responses, "requestState": first["requestState"]},
        caps,
    )
    [(key2, ask2)] = second["inputRequests"].items()
    assert key2 != key
    assert ask2["params"]["messages"][2]["content"][0]["toolUseId"] == "call-1"
    validate_definition(MODERN, "CreateMessageRequestParams", ask2["params"])
    done = await call(
        server,
        "tools/call",
        {
            "name": "agent",
            "inputResponses": {**responses, key2: ANSWERS},
            "requestState": second["requestState"],
        },
        caps,
    )
    assert text_of(done) == "1 tool use(s), then: Sunny"


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_tools_need_the_clients_sampling_tools(era: str) -> None:
    meta = legacy({"sampling": {}}) if era == "legacy" else modern({"sampling": {}})
    error = await call_error(make_server(), "tools/call", {"name": "agent"}, meta, code=-32021)
    assert error.data == {"requiredCapabilities": {"sampling": {"tools": {}}}}


def test_bad_tools_and_choices_are_refused_by_name() -> None:
    from mcpkit.server.sampling import sampling_tools, tool_choice

    server = make_server()
    with pytest.raises(ValueError, match="no tool named 'nope'"):
        sampling_tools(server, ["nope"])
    with pytest.raises(ValueError, match="inputSchema"):
        sampling_tools(server, [{"name": "x"}])
    with pytest.raises(ValueError, match="repeat"):
        sampling_tools(server, ["weather", "weather"])
    with pytest.raises(ValueError, match="mode must be one of"):
        tool_choice("sometimes")
    assert tool_choice({"mode": "none"}) == {"mode": "none"}
