"""Streamed model replies: the Anthropic and OpenAI adapters read server-sent events from a
local fake endpoint (uvicorn on 127.0.0.1) that plays API transcripts kept in
``fixtures/`` (the APIs' documented streaming formats, written out by hand: no network
here), event by event.  The loop turns text deltas into ``assistant_delta`` events."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from hostkit import Transcripts, calls, stdio_server

from mcpkit.host import Host, HostConfig, Permission
from mcpkit.host.loop import Conversation
from mcpkit.host.models import ModelError
from mcpkit.host.models.anthropic import AnthropicModel
from mcpkit.host.models.base import Sinks
from mcpkit.host.models.openai import OpenAIModel

pytestmark = pytest.mark.anyio


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Transcripts], Any]]:
    async with anyio.create_task_group() as tg:
        servers: list[uvicorn.Server] = []

        async def start(api: Transcripts) -> str:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            server = uvicorn.Server(uvicorn.Config(api.app, log_level="warning", lifespan="off"))
            servers.append(server)
            tg.start_soon(lambda: server.serve(sockets=[sock]))
            with anyio.fail_after(10):
                while not server.started:
                    await anyio.sleep(0.01)
            return f"http://127.0.0.1:{sock.getsockname()[1]}"

        yield start
        for server in servers:
            server.should_exit = True


async def converse(folder: Path, model: Any) -> tuple[str, list[str]]:
    config = HostConfig(
        servers=(stdio_server("alpha", "alpha.py", folder),),
        server_permissions={"alpha": Permission.ALLOW},
    )
    deltas: list[str] = []

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind == "assistant_delta":
            deltas.append(data["text"])

    async with Host(config) as host:
        final = await Conversation(host, model, on_event=on_event).send("Add 2 and 40.")
    return final, deltas


async def test_anthropic_streams_text_and_tool_input(tmp_path: Path, serve: Any) -> None:
    api = Transcripts("/v1/messages", ["anthropic_stream_tool.sse", "anthropic_stream_text.sse"])
    model = AnthropicModel("claude-test", api_key="k", base_url=await serve(api))
    final, deltas = await converse(tmp_path, model)
    assert final == "The sum is 42."
    assert deltas == ["Let me ", "add them.", "The sum", " is ", "42."]
    assert all(body["stream"] is True for body in api.bodies)
    assistant, results = api.bodies[1]["messages"][1:]
    assert assistant["content"] == [
        {"type": "text", "text": "Let me add them."},
        {"type": "tool_use", "id": "toolu_s1", "name": "alpha__add", "input": {"a": 2, "b": 40}},
    ]  # the JSON fragments, joined
    assert results["content"][0]["content"] == [{"type": "text", "text": "alpha: 42"}]
    assert calls(tmp_path, "alpha") == ["add"]


async def test_openai_streams_text_and_tool_arguments(tmp_path: Path, serve: Any) -> None:
    api = Transcripts("/v1/chat/completions", ["openai_stream_tool.sse", "openai_stream_text.sse"])
    model = OpenAIModel("gpt-test", api_key="k", base_url=await serve(api) + "/v1")
    final, deltas = await converse(tmp_path, model)
    assert final == "The sum is 42."
    assert deltas == ["Adding", " now.", "The sum", " is 42."]
    assert api.bodies[0]["stream_options"] == {"include_usage": True}
    assistant = api.bodies[1]["messages"][2]
    assert assistant["content"] == "Adding now."
    call = assistant["tool_calls"][0]
    assert call["id"] == "call_s1" and json.loads(call["function"]["arguments"]) == {
        "a": 2,
        "b": 40,
    }
    assert api.bodies[1]["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_s1",
        "content": "alpha: 42",
    }


async def test_a_refused_stream_is_one_clear_error(serve: Any) -> None:
    api = Transcripts("/v1/messages", [], status=401)
    model = AnthropicModel("claude-test", api_key="wrong", base_url=await serve(api))
    with pytest.raises(ModelError, match=r"^Anthropic API at .* answered HTTP 401: .*x-api-key"):
        await model.stream_reply(
            [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            [],
            None,
            Sinks(lambda text: None),
        )


async def test_streamed_arguments_of_an_app_tool_reach_the_page_early(
    tmp_path: Path, serve: Any
) -> None:
    api = Transcripts("/v1/messages", ["anthropic_stream_ui_tool.sse", "anthropic_stream_text.sse"])
    model = AnthropicModel("claude-test", api_key="k", base_url=await serve(api))
    config = HostConfig(
        servers=(stdio_server("probe", "probe.py", tmp_path),),
        server_permissions={"probe": Permission.ALLOW},
    )
    events: list[tuple[str, dict[str, Any]]] = []
    async with Host(config) as host:
        await Conversation(host, model, on_event=lambda k, d: events.append((k, d))).send(
            "Show me a probe."
        )
    kinds = [k for k, _ in events if k in ("tool_input_partial", "tool_call", "tool_result")]
    assert kinds == ["tool_input_partial"] * 3 + ["tool_call", "tool_result"]
    partials = [d["arguments"] for k, d in events if k == "tool_input_partial"]
    assert partials == [{}, {"topic": "green "}, {"topic": "green tea"}]  # JSON closed
    first = next(d for k, d in events if k == "tool_input_partial")
    assert first["app"] == {"server": "probe", "tool": "show_probe", "uri": "ui://probe/view.html"}
    call = next(d for k, d in events if k == "tool_call")
    assert call["arguments"] == {"topic": "green tea"} and call["id"] == first["id"]


def test_recovering_incomplete_json() -> None:
    from mcpkit.host.loop import recover_json

    assert recover_json('{"a": "te') == {"a": "te"}
    assert recover_json('{"a": "tea", "b') == {"a": "tea"}  # a key without its value
    assert recover_json('{"a": [1, {"x": 2') == {"a": [1, {"x": 2}]}
    assert recover_json('{"a": "q\\"') == {"a": 'q"'}
    assert recover_json('{"a"') == {} and recover_json("") is None
    assert recover_json('{"a": 1]') is None and recover_json("[1, 2") is None
