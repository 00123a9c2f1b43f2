"""Registration options: ``on_duplicate`` for tools, resources, templates and prompts, and
what each era's client then sees."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel

from mcpkit import Context, McpError, Server
from mcpkit.server import CallNext, Middleware
from support.inproc import call, legacy, modern, text_of

pytestmark = pytest.mark.anyio

ERAS = [pytest.param(modern, id="modern"), pytest.param(legacy, id="legacy")]


def test_duplicates_are_refused_by_default() -> None:
    server = Server("dup")

    @server.tool
    def search(q: str) -> str:
        return "first"

    with pytest.raises(ValueError, match="tool 'search' is already registered"):

        @server.tool(name="search")
        def other(q: str) -> str:
            return "second"

    server.resource("test://a")(lambda: "a")
    with pytest.raises(ValueError, match="resource 'test://a'"):
        server.resource("test://a")(lambda: "b")
    server.resource("test://t/{x}")(lambda x: x)
    with pytest.raises(ValueError, match="resource template"):
        server.resource("test://t/{x}")(lambda x: x * 2)

    @server.prompt
    def greet(name: str) -> str:
        return name

    with pytest.raises(ValueError, match="prompt 'greet'"):
        server.prompt(name="greet")(lambda name: name)
    with pytest.raises(ValueError):
        Server("bad", on_duplicate="ignore")


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", ["replace", "warn"])
async def test_replace_and_warn_keep_the_newest(
    era: Any, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("dup", on_duplicate=mode)

    @server.tool
    def search(q: str) -> str:
        return "first"

    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):

        @server.tool(name="search")
        def newer(q: str) -> str:
            return "second"

        server.resource("test://t/{x}")(lambda x: "old")
        server.resource("test://t/{x}")(lambda x: "new")
    warned = [r for r in caplog.records if "already registered" in r.getMessage()]
    assert len(warned) == (2 if mode == "warn" else 0)
    listed = await call(server, "tools/list", {}, era())
    assert [t["name"] for t in listed["tools"]] == ["search"]
    result = await call(server, "tools/call", {"name": "search", "arguments": {"q": "x"}}, era())
    assert text_of(result) == "second"
    templates = await call(server, "resources/templates/list", {}, era())
    assert len(templates["resourceTemplates"]) == 1
    read = await call(server, "resources/read", {"uri": "test://t/1"}, era())
    assert read["contents"][0]["text"] == "new"


# --------------------------------------------------------------------------- JSON strings


class Point(BaseModel):
    x: int
    y: int = 0


def json_server() -> Server:
    server = Server("json-args")

    @server.tool
    def place(point: Point, tags: list[str], options: dict[str, int] | None = None) -> str:
        return f"{point.x},{point.y} {tags} {options}"

    @server.tool
    def say(text: str, maybe: str | list[str] = "-") -> str:
        return f"{text!r} {maybe!r}"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_json_strings_for_object_and_array_parameters(era: Any) -> None:
    server = json_server()
    args: dict[str, Any] = {
        "point": '{"x": 1, "y": 2}',
        "tags": '["a", "b"]',
        "options": '{"k": 3}',
    }
    result = await call(server, "tools/call", {"name": "place", "arguments": args}, era())
    assert text_of(result) == "1,2 ['a', 'b'] {'k': 3}"
    # Real objects still work, and the JSON form must still validate.
    args = {"point": {"x": 5}, "tags": ["c"]}
    result = await call(server, "tools/call", {"name": "place", "arguments": args}, era())
    assert text_of(result) == "5,0 ['c'] None"
    bad = {"point": '{"x": "not a number"}', "tags": "[]"}
    result = await call(server, "tools/call", {"name": "place", "arguments": bad}, era())
    assert result["isError"] is True and "point.x" in text_of(result)
    not_json = {"point": "{x: 1", "tags": "[]"}
    result = await call(server, "tools/call", {"name": "place", "arguments": not_json}, era())
    assert result["isError"] is True
    scalar = {"point": "7", "tags": "[]"}  # JSON, but not an object: left to validation
    result = await call(server, "tools/call", {"name": "place", "arguments": scalar}, era())
    assert result["isError"] is True


@pytest.mark.parametrize("era", ERAS)
async def test_string_parameters_are_never_reparsed(era: Any) -> None:
    server = json_server()
    args = {"text": '{"a": 1}', "maybe": '["x"]'}
    result = await call(server, "tools/call", {"name": "say", "arguments": args}, era())
    assert text_of(result) == "'{\"a\": 1}' '[\"x\"]'"


# --------------------------------------------------------------------------- own resources


@pytest.mark.parametrize("era", ERAS)
async def test_ctx_reads_own_resources_and_prompts_through_middleware(era: Any) -> None:
    seen: list[str] = []

    class Guard(Middleware):
        async def on_read_resource(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            seen.append(ctx.params["uri"])
            if ctx.params["uri"] == "test://secret":
                raise McpError(-32001, "hidden")
            return await call_next(ctx)

        async def on_get_prompt(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            seen.append(ctx.params["name"])
            return await call_next(ctx)

    server = Server("own", middleware=[Guard()])
    server.resource("test://doc")(lambda: "the doc")
    server.resource("test://secret")(lambda: "s3cr3t")

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    @server.tool
    async def summarize(ctx: Context) -> str:
        doc = await ctx.read_resource("test://doc")
        prompt = await ctx.get_prompt("greet", {"name": "Ada"})
        try:
            await ctx.read_resource("test://secret")
        except McpError as err:
            refused = err.message
        return (
            f"{doc['contents'][0]['text']} | {prompt['messages'][0]['content']['text']} | {refused}"
        )

    result = await call(server, "tools/call", {"name": "summarize"}, era())
    assert text_of(result) == "the doc | Hello Ada | hidden"
    assert seen == ["test://doc", "greet", "test://secret"]


# --------------------------------------------------------------------------- sync tools


@pytest.mark.parametrize("era", ERAS)
async def test_plain_def_tools_run_in_a_worker_thread_unless_inline(era: Any) -> None:
    import threading

    import anyio

    server = Server("threads")
    released = threading.Event()
    outcome: dict[str, bool] = {}

    @server.tool
    def blocking() -> str:
        # Blocks its thread until another request runs: on the event loop this would
        # never happen (the wait would time out).
        outcome["released"] = released.wait(timeout=10)
        return "unblocked"

    @server.tool
    async def release() -> str:
        released.set()
        return "released"

    @server.tool
    def where() -> str:
        return "loop" if threading.get_ident() == loop_thread else "worker"

    @server.tool(inline=True)
    def where_inline() -> str:
        return "loop" if threading.get_ident() == loop_thread else "worker"

    loop_thread = threading.get_ident()
    results: dict[str, dict[str, Any]] = {}

    async def run(name: str) -> None:
        results[name] = await call(server, "tools/call", {"name": name}, era())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "blocking")
        await anyio.sleep(0)
        tg.start_soon(run, "release")
    assert outcome == {"released": True}
    assert text_of(results["blocking"]) == "unblocked"
    assert text_of(await call(server, "tools/call", {"name": "where"}, era())) == "worker"
    assert text_of(await call(server, "tools/call", {"name": "where_inline"}, era())) == "loop"
    with pytest.raises(ValueError):
        server.tool(inline=True, timeout=1.0)(lambda: None)


@pytest.mark.parametrize("method", ["tool", "prompt", "resource"])
def test_an_unknown_option_is_refused_when_the_decorator_is_made(method: str) -> None:
    server = Server("keywords")
    register = getattr(server, method)
    args = ("note://x",) if method == "resource" else ()
    with pytest.raises(TypeError, match=rf"Server\.{method}\(\) got an unexpected keyword"):
        register(*args, nmae="typo")
    assert not (server.tools or server.prompts or server.resources)
