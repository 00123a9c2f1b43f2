"""The model loop: a scripted model over two real servers, and the Anthropic and OpenAI
adapters against local fake endpoints (uvicorn on 127.0.0.1) speaking those APIs' formats.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from hostkit import ScriptedPerson, calls, stdio_server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpkit.host import Host, HostConfig, ModelConfig, Permission
from mcpkit.host.loop import Conversation, cap_blocks, estimate_tokens, sampler_for
from mcpkit.host.models import ModelReply, ToolCall, model_from_config
from mcpkit.host.models.anthropic import AnthropicModel
from mcpkit.host.models.openai import OpenAIModel
from mcpkit.host.models.scripted import ScriptedModel
from mcpkit.host.skills import skill_tool

pytestmark = pytest.mark.anyio


def two_servers(folder: Path, **extra: Any) -> HostConfig:
    return HostConfig(
        servers=(
            stdio_server("alpha", "alpha.py", folder),
            stdio_server("beta", "beta.py", folder),
        ),
        **extra,
    )


def last_result_text(messages: list[dict[str, Any]]) -> str:
    result = messages[-1]["content"][0]
    return " ".join(b["text"] for b in result["content"] if b["type"] == "text")


async def test_a_scripted_conversation_uses_tools_on_two_servers(tmp_path: Path) -> None:
    def answer(messages: list[dict[str, Any]]) -> ModelReply:
        return ModelReply(text=f"Alpha said {last_result_text(messages)!r}; all done.")

    model = ScriptedModel(
        [
            ModelReply(
                text="Let me add.", tool_calls=(ToolCall("c1", "alpha__add", {"a": 2, "b": 3}),)
            ),
            ModelReply(
                tool_calls=(
                    ToolCall("c2", "beta__weather", {"city": "Oslo"}),
                    ToolCall("c3", "alpha__write_note", {"text": "hi"}),
                )
            ),
            ModelReply(tool_calls=(ToolCall("c4", "alpha__echo", {"text": "twice"}),)),
            answer,
        ]
    )
    person = ScriptedPerson(consent=lambda request: request.tool != "write_note")
    config = two_servers(
        tmp_path,
        server_permissions={"beta": Permission.ALLOW},
        tool_permissions={"alpha__add": Permission.ALLOW, "alpha__echo": Permission.ALLOW},
    )
    events: list[tuple[str, dict[str, Any]]] = []
    async with Host(config, interaction=person) as host:
        chat = Conversation(
            host, model, system="Be brief.", on_event=lambda kind, data: events.append((kind, data))
        )
        final = await chat.send("Add 2 and 3, check Oslo, then note it.")
    assert final == "Alpha said 'twice'; all done."
    # every request offered the tools of both servers, namespaced
    assert {"alpha__add", "beta__add", "beta__weather"} <= set(model.requests[0]["tools"])
    system = model.requests[0]["system"]
    assert system.startswith("Be brief.\n\nInstructions from the MCP servers")
    assert '<server name="alpha" tools="alpha__*">\nArithmetic, notes' in system
    second = model.requests[1]["messages"]
    assert second[-1]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [{"type": "text", "text": "alpha: 5"}],
        "is_error": False,
    }
    third = model.requests[2]["messages"][-1]["content"]
    weather, note = third
    assert weather["content"][0]["text"] == json.dumps(
        {"city": "Oslo", "celsius": 21.5}, separators=(",", ":")
    )
    assert note["is_error"] and "refused" in note["content"][0]["text"]
    assert calls(tmp_path, "alpha") == ["add", "echo"]  # the refused note never ran
    assert calls(tmp_path, "beta") == ["weather"]
    assert [k for k, _ in events].count("tool_call") == 4
    # what the page's call cards show: duration, the structured result, a refusal as such
    results = {d["id"]: d for k, d in events if k == "tool_result"}
    assert results["c2"]["structured"] == {"city": "Oslo", "celsius": 21.5}
    assert all(isinstance(d["durationMs"], int) for d in results.values())
    assert [i for i, d in results.items() if d.get("refused")] == ["c3"]  # write_note


async def test_resources_and_prompts_the_person_attaches(tmp_path: Path) -> None:
    model = ScriptedModel([{"text": "ok"}])
    async with Host(two_servers(tmp_path)) as host:
        chat = Conversation(host, model)
        await chat.attach_resource("alpha", "note://alpha/today")
        await chat.use_prompt("alpha", "review", {"topic": "tea"})
        await chat.send("and be kind")
    sent = model.requests[0]["messages"]
    assert len(sent) == 1 and sent[0]["role"] == "user"
    texts = [b["text"] for b in sent[0]["content"]]
    assert texts == [
        "[note://alpha/today]\nWater the plants.",
        "Write a two-line review of tea.",
        "and be kind",
    ]


async def test_sampling_uses_only_what_the_server_sent() -> None:
    model = ScriptedModel([{"text": "a haiku"}])
    sample = sampler_for(model)
    result = await sample(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "write a haiku"}}],
            "systemPrompt": "poet",
            "maxTokens": 50,
        }
    )
    assert result == {
        "role": "assistant",
        "content": {"type": "text", "text": "a haiku"},
        "model": "scripted",
        "stopReason": "endTurn",
    }
    assert model.requests[0]["tools"] == [] and model.requests[0]["system"] == "poet"


async def test_sampling_with_tools_returns_the_models_tool_calls_to_the_server(
    tmp_path: Path,
) -> None:
    """A real server samples with two of its tools: the host declares ``sampling.tools``,
    the model sees the tools the policy allows (not the denied one), its tool call goes
    back to the server as a ``tool_use`` block (the host runs nothing), and the server's
    ``tool_result`` reaches the model in the next round, each round approved by the person."""

    def answer(messages: list[dict[str, Any]]) -> ModelReply:
        return ModelReply(text=f"Found: {last_result_text(messages)}", stop_reason="end_turn")

    model = ScriptedModel(
        [ModelReply(tool_calls=(ToolCall("u1", "lookup", {"topic": "tea"}),)), answer]
    )
    person = ScriptedPerson(consent=True, sampling=True)
    config = HostConfig(servers=(stdio_server("sampler", "sampler.py", tmp_path),))
    async with Host(config, interaction=person, sampler=sampler_for(model)) as host:
        host.policy.choose_tool("sampler__secret", Permission.DENY)
        result = await host.call_tool("sampler__research", {"question": "tea?"}, origin="user")
        audit = [e for e in host.audit.entries if e.kind == "sampling"]
        assert not host.audit.for_tool("sampler__lookup")  # the host called no tool itself
    assert not result.get("isError"), result
    assert result["content"][0]["text"] == "Found: Tea was first drunk in China."
    assert [r["tools"] for r in model.requests] == [["lookup"], ["lookup"]]
    # the server ran the lookup (the host never calls a sampled tool); on 2026-07-28 the
    # handler is run again for each input round, so the same lookup may be recorded twice
    assert set(calls(tmp_path, "sampler")) == {"lookup:tea"}
    sent = model.requests[1]["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "u1", "name": "lookup", "input": {"topic": "tea"}}],
    }
    assert sent[2]["content"][0]["type"] == "tool_result"
    assert sent[2]["content"][0]["tool_use_id"] == "u1"
    # the person approved each round, and saw the server's own offer (both tools)
    assert [len(p["tools"]) for _, p in person.sampled] == [2, 2]
    assert [e.decision for e in audit] == ["approved", "approved"]


@pytest.mark.parametrize(("mode", "shown"), [("auto", ["lookup"]), ("none", [])])
async def test_sampling_tool_choice_decides_whether_the_model_sees_the_tools(
    mode: str, shown: list[str]
) -> None:
    model = ScriptedModel([{"text": "no tools needed"}])
    result = await sampler_for(model)(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": mode},
            "maxTokens": 50,
        }
    )
    assert model.requests[0]["tools"] == shown
    assert result["stopReason"] == "endTurn"


class VisitingPerson(ScriptedPerson):
    """Accepts a URL elicitation and "visits" the page (leaves the file the page would)."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.urls: list[str] = []

    async def elicit_url(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        self.urls.append(str(params["url"]))
        (self.folder / f"visited-{params['url'].rsplit('/', 1)[-1]}").touch()
        return {"action": "accept"}


async def test_the_host_audits_a_url_elicitation_and_its_completion(tmp_path: Path) -> None:
    server = stdio_server("connect", "connect.py", tmp_path, era="legacy")
    server.env["CONNECT_PAGE"] = "https://accounts.example"
    person = VisitingPerson(tmp_path)
    async with Host(HostConfig(servers=(server,)), interaction=person) as host:
        events: list[dict[str, Any]] = []
        host.listeners.append(
            lambda kind, data: events.append(data) if kind == "url_elicitation" else None
        )
        result = await host.call_tool("connect__connect_account", {}, origin="user")
        audit = [(e.name, e.decision, e.by) for e in host.audit.entries if e.kind == "elicitation"]
    assert result["content"][0]["text"] == "connected"
    eid = person.urls[0].rsplit("/", 1)[-1]
    assert [(e["state"], e["elicitationId"]) for e in events] == [
        ("waiting", eid),
        ("completed", eid),
    ]
    assert events[0]["url"] == person.urls[0]
    assert audit == [("url", "accept", "user"), ("url", "completed", "server")]


async def test_skills_are_offered_by_description_and_read_only_when_chosen(
    tmp_path: Path,
) -> None:
    """A server publishing a skills folder: the model sees a ``load_skill`` tool naming
    each skill with its description; the chosen skill's body is fetched then (its
    ``skills/get`` and ``SKILL.md`` read), the other skill's never."""

    def answer(messages: list[dict[str, Any]]) -> ModelReply:
        return ModelReply(text=last_result_text(messages), stop_reason="end_turn")

    model = ScriptedModel(
        [
            ModelReply(
                tool_calls=(ToolCall("s1", "load_skill", {"skill": "skillful/tea-brewing"}),)
            ),
            answer,
        ]
    )
    config = HostConfig(servers=(stdio_server("skillful", "skillful.py", tmp_path),))
    async with Host(config) as host:
        chat = Conversation(host, model)
        said = await chat.send("How do I brew green tea?")
        assert model.requests[0]["tools"] == ["skillful__kettle", "load_skill"]
        offered = skill_tool(chat.skills)
    assert (
        "- skillful/haiku: Write a haiku (three lines, 5-7-5 syllables)." in offered["description"]
    )
    assert (
        "- skillful/tea-brewing: How to brew a cup of green or black tea." in offered["description"]
    )
    assert "80 °C" not in offered["description"]  # descriptions only, never a body
    assert said.startswith("[skill skillful/tea-brewing, written by server 'skillful':]")
    assert "Green tea: water at 80 °C, two minutes." in said
    assert calls(tmp_path, "skillful") == [
        "skills/get:skill://tea-brewing/SKILL.md",
        "resources/read:skill://tea-brewing/SKILL.md",
    ]


# ---------------------------------------------------------------------------- fake APIs
Handler = Callable[[dict[str, Any], int], dict[str, Any]]


class FakeApi:
    """A fake model endpoint on a real socket; keeps every request it got."""

    def __init__(self, path: str, handler: Handler) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

        async def endpoint(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append((dict(request.headers), body))
            return JSONResponse(handler(body, len(self.requests)))

        self.app = Starlette(routes=[Route(path, endpoint, methods=["POST"])])


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[FakeApi], Any]]:
    async with anyio.create_task_group() as tg:
        servers: list[uvicorn.Server] = []

        async def start(api: FakeApi) -> str:
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


def anthropic_handler(body: dict[str, Any], n: int) -> dict[str, Any]:
    if n == 1:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "beta__chart", "input": {}},
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "alpha__add",
                    "input": {"a": 1, "b": 2},
                },
            ],
        }
    return {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "A bar chart; 3."}],
    }


async def test_anthropic_adapter_against_a_fake_messages_api(
    tmp_path: Path, serve: Callable[[FakeApi], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    api = FakeApi("/v1/messages", anthropic_handler)
    base = await serve(api)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model = model_from_config(ModelConfig("anthropic", "claude-test", base_url=base))
    assert isinstance(model, AnthropicModel)
    async with Host(two_servers(tmp_path, default_permission=Permission.ALLOW)) as host:
        final = await Conversation(host, model, system="sys", stream=False).send(
            "Show me the chart"
        )
    assert final == "A bar chart; 3."
    headers, first = api.requests[0]
    assert headers["x-api-key"] == "sk-ant-test" and headers["anthropic-version"]
    assert first["system"].startswith("sys\n\n") and first["model"] == "claude-test"
    assert "Arithmetic, notes and a crash button." in first["system"]  # alpha's instructions
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Show me the chart"}]}
    ]
    tool = next(t for t in first["tools"] if t["name"] == "alpha__distance")
    assert tool["input_schema"]["properties"]["start"]["properties"]["x"]["type"] == "number"
    _, second = api.requests[1]
    assistant, results = second["messages"][1:]
    assert assistant["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "beta__chart",
        "input": {},
    }
    chart, add = results["content"]
    assert chart["type"] == "tool_result" and chart["tool_use_id"] == "toolu_1"
    image = chart["content"][0]
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png" and image["source"]["data"]
    assert add["content"] == [{"type": "text", "text": "alpha: 3"}]


def openai_handler(body: dict[str, Any], n: int) -> dict[str, Any]:
    if n == 1:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "beta__chart", "arguments": "{}"},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "alpha__add", "arguments": '{"a": 4, "b": 5}'},
                },
            ],
        }
        reason = "tool_calls"
    else:
        message, reason = {"role": "assistant", "content": "Chart seen; 9."}, "stop"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }


async def test_openai_adapter_against_a_fake_chat_completions_api(
    tmp_path: Path, serve: Callable[[FakeApi], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    api = FakeApi("/v1/chat/completions", openai_handler)
    base = await serve(api)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = model_from_config(ModelConfig("openai", "gpt-test", base_url=base + "/v1"))
    assert isinstance(model, OpenAIModel)
    async with Host(two_servers(tmp_path, default_permission=Permission.ALLOW)) as host:
        final = await Conversation(host, model, system="sys", stream=False).send("chart please")
    assert final == "Chart seen; 9."
    headers, first = api.requests[0]
    assert headers["authorization"] == "Bearer sk-test"
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][0]["content"].startswith("sys\n\nInstructions from the MCP")
    assert first["messages"][1:] == [{"role": "user", "content": "chart please"}]
    function = next(t["function"] for t in first["tools"] if t["function"]["name"] == "beta__add")
    assert function["parameters"]["type"] == "object"
    _, second = api.requests[1]
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assistant = second["messages"][2]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["beta__chart", "alpha__add"]
    chart_msg, add_msg, images = second["messages"][3:]
    assert chart_msg["tool_call_id"] == "call_a" and "image" in chart_msg["content"]
    assert add_msg == {"role": "tool", "tool_call_id": "call_b", "content": "alpha: 9"}
    assert images["content"][1]["type"] == "image_url"
    assert images["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_model_errors_are_reported_in_words(serve: Callable[[FakeApi], Any]) -> None:
    api = FakeApi("/v1/messages", lambda body, n: {"error": "nope"})
    base = await serve(api)
    from mcpkit.host.models import ModelError

    with pytest.raises(ModelError, match="ANTHROPIC_KEY_FOR_TEST"):
        model_from_config(ModelConfig("anthropic", api_key_env="ANTHROPIC_KEY_FOR_TEST"))
    bad = OpenAIModel("x", api_key="k", base_url=base)  # wrong path: 404
    with pytest.raises(ModelError, match="HTTP 404"):
        await bad.reply([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], [])


async def test_context_hygiene_denied_tools_output_cap_and_instructions(tmp_path: Path) -> None:
    big = "word " * 20_000  # about 25,000 estimated tokens
    model = ScriptedModel(
        [
            ModelReply(tool_calls=(ToolCall("c1", "alpha__echo", {"text": big}),)),
            ModelReply(text="ok"),
        ]
    )
    config = two_servers(
        tmp_path,
        server_permissions={"alpha": Permission.ALLOW},
        tool_permissions={"alpha__crash": Permission.DENY, "beta__add": Permission.DENY},
        max_tool_output_tokens=1000,
    )
    async with Host(config, interaction=ScriptedPerson()) as host:
        chat = Conversation(host, model)
        assert await chat.send("echo it") == "ok"
    offered = set(model.requests[0]["tools"])
    assert "alpha__crash" not in offered and "beta__add" not in offered
    assert {"alpha__add", "alpha__echo", "beta__weather"} <= offered
    result = model.requests[1]["messages"][-1]["content"][0]
    texts = [b["text"] for b in result["content"]]
    assert "truncated: about 25,00" in texts[-1] and "cap of 1,000" in texts[-1]
    assert sum(estimate_tokens(t) for t in texts[:-1]) <= 1000
    assert texts[0].startswith("word word")
    assert calls(tmp_path, "alpha") == ["echo"]  # the full output ran; only the model's copy
    assert model.requests[0]["system"].count("<server name=") == 1  # beta sends none


def test_the_token_estimate_errs_high_for_non_ascii_and_keeps_images() -> None:
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("日本語") == 3
    image = {"type": "image", "mimeType": "image/png", "data": "A" * 100_000}
    capped = cap_blocks([{"type": "text", "text": "x" * 4000}, image], 100)
    assert capped[0]["text"] == "x" * 400 and capped[1] is image
    assert "truncated" in capped[2]["text"]
    short = [{"type": "text", "text": "fine"}]
    assert cap_blocks(short, 100) is short


async def test_deferred_tool_loading_offers_a_search_and_what_it_found(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ModelReply(tool_calls=(ToolCall("s1", "search_tools", {"query": "weather city"}),)),
            ModelReply(tool_calls=(ToolCall("w1", "beta__weather", {"city": "Oslo"}),)),
            ModelReply(text="Mild in Oslo."),
        ]
    )
    config = two_servers(tmp_path, default_permission=Permission.ALLOW, tool_search=0)
    async with Host(config) as host:
        chat = Conversation(host, model)
        assert await chat.send("Weather in Oslo?") == "Mild in Oslo."
    first, second, _ = (r["tools"] for r in model.requests)
    assert first == ["search_tools"]  # no definitions sent up front
    assert "beta__weather" in second and "alpha__add" not in second
    found = model.requests[1]["messages"][-1]["content"][0]["content"][0]["text"]
    assert found.splitlines()[1].startswith("- beta__weather: ")
    weather = model.requests[2]["messages"][-1]["content"][0]["content"][0]["text"]
    assert json.loads(weather)["city"] == "Oslo"
    assert calls(tmp_path, "beta") == ["weather"]


async def test_small_catalogs_are_not_deferred(tmp_path: Path) -> None:
    model = ScriptedModel([ModelReply(text="ok")])
    async with Host(two_servers(tmp_path, tool_search=1000)) as host:
        await Conversation(host, model).send("hi")
    assert "search_tools" not in model.requests[0]["tools"]
    assert "alpha__add" in model.requests[0]["tools"]
