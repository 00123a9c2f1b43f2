"""Sampling with tools (SEP-1577), the client's side, over memory on both eras: the
sampling callback receives the server's tools, answers with ``tool_use`` and then with
text once the ``tool_result`` comes back; without ``sampling_tools=True`` the server
refuses with -32021; a ``tool_use`` of a tool the request did not offer is an error."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Context, McpError, Server
from mcpkit.client import Client, CreateMessageResult
from mcpkit.client.errors import InputRequestError
from mcpkit.server.sampling import tool_result, tool_results_message, tool_uses
from mcpkit.types.versions import EraChoice

pytestmark = pytest.mark.anyio

ERAS: list[EraChoice] = ["legacy", "modern"]


def make_server() -> Server:
    server = Server("sampler")

    @server.tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    @server.tool
    async def solve(ctx: Context) -> str:
        """Lets the client's model add with the server's tool."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": {"type": "text", "text": "2 + 40?"}}
        ]
        while True:
            answer = await ctx.sample(messages, tools=["add"], tool_choice="auto")
            uses = tool_uses(answer)
            if not uses:
                return str(answer["content"]["text"])
            results = [tool_result(u["id"], str(add(**u["input"]))) for u in uses]
            messages += [
                {"role": "assistant", "content": answer["content"]},
                tool_results_message(results),
            ]

    return server


class Model:
    """A client's model: asks for ``add`` once, then answers with the tool's result."""

    def __init__(self, tool: str = "add") -> None:
        self.tool = tool
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, params: dict[str, Any]) -> CreateMessageResult:
        self.seen.append(params)
        last = params["messages"][-1]["content"]
        if isinstance(last, list) and last[0]["type"] == "tool_result":
            text = last[0]["content"][0]["text"]
            return {
                "role": "assistant",
                "content": {"type": "text", "text": f"It is {text}"},
                "model": "m",
            }
        use = {"type": "tool_use", "id": "u1", "name": self.tool, "input": {"a": 2, "b": 40}}
        return {"role": "assistant", "content": [use], "model": "m", "stopReason": "toolUse"}


@pytest.mark.parametrize("era", ERAS)
async def test_the_callback_gets_tools_and_the_tool_result_comes_back(era: EraChoice) -> None:
    model = Model()
    async with Client(make_server(), era=era, sampling=model, sampling_tools=True) as client:
        result = await client.call_tool("solve", {})
    assert result["content"][0]["text"] == "It is 42"
    first, second = model.seen
    assert [t["name"] for t in first["tools"]] == ["add"]
    assert first["toolChoice"] == {"mode": "auto"}
    assert second["messages"][1]["content"][0]["id"] == "u1"
    assert second["messages"][2]["content"][0]["toolUseId"] == "u1"


@pytest.mark.parametrize("era", ERAS)
async def test_without_sampling_tools_the_server_refuses(era: EraChoice) -> None:
    async with Client(make_server(), era=era, sampling=Model()) as client:
        with pytest.raises(McpError) as info:
            await client.call_tool("solve", {})
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"sampling": {"tools": {}}}}


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_use_of_an_unoffered_tool_is_an_error(era: EraChoice) -> None:
    model = Model(tool="rm")
    async with Client(make_server(), era=era, sampling=model, sampling_tools=True) as client:
        # modern: raised where the round is answered; legacy: the server gets it back
        with pytest.raises((InputRequestError, McpError)) as info:
            await client.call_tool("solve", {})
    assert "'rm', which the request did not offer" in str(info.value)
