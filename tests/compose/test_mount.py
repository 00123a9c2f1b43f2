"""Live in-process mounts, through a real in-memory client on both eras: clashing names,
resources and templates under a namespace, list changes across a mount, middleware of
both servers, input requests (MRTR and legacy elicitation), completions, nesting and
unmounting at run time."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client, ElicitResult
from mcpkit.server import CallNext, Context, Middleware
from mcpkit.server.mount import namespace_uri, strip_uri
from mcpkit.types.versions import EraChoice
from support.mcp import first_text

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]


def weather() -> Server:
    server = Server("weather")

    @server.tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @server.resource("data://config")
    def config() -> str:
        return "weather-config"

    @server.resource("data://cities/{city}")
    def city(city: str) -> str:
        return f"city:{city}"

    @server.prompt
    def forecast(city: str) -> str:
        return f"Forecast for {city}?"

    @server.completion
    def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
        return [c for c in ("paris", "perth", "oslo") if c.startswith(argument["value"])]

    return server


def news() -> Server:
    server = Server("news")

    @server.tool
    def lookup(topic: str) -> str:  # the same name as weather's tool
        return f"headlines about {topic}"

    @server.resource("data://config")  # the same URI as weather's resource
    def config() -> str:
        return "news-config"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_clashing_names_live_side_by_side(era: EraChoice) -> None:
    main = Server("main")

    @main.tool
    def lookup(x: str) -> str:  # the parent's own tool keeps its plain name
        return f"own {x}"

    main.mount(weather(), namespace="weather")
    main.mount(news(), namespace="news")
    async with Client(main, era=era) as client:
        names = sorted(t["name"] for t in await client.list_tools())
        assert names == ["lookup", "news_lookup", "weather_lookup"]
        assert (
            first_text(await client.call_tool("weather_lookup", {"city": "Oslo"}))
            == "sunny in Oslo"
        )
        assert first_text(await client.call_tool("news_lookup", {"topic": "mcp"})) == (
            "headlines about mcp"
        )
        assert first_text(await client.call_tool("lookup", {"x": "1"})) == "own 1"
        uris = sorted(r["uri"] for r in await client.list_resources())
        assert uris == ["data://news/config", "data://weather/config"]
        read = await client.read_resource("data://news/config")
        assert read["contents"][0]["text"] == "news-config"
        assert read["contents"][0]["uri"] == "data://news/config"
        templates = [t["uriTemplate"] for t in await client.list_resource_templates()]
        assert templates == ["data://weather/cities/{city}"]
        read = await client.read_resource("data://weather/cities/lima")
        assert read["contents"][0]["text"] == "city:lima"
        prompts = [p["name"] for p in await client.list_prompts()]
        assert prompts == ["weather_forecast"]
        got = await client.get_prompt("weather_forecast", {"city": "Rome"})
        assert got["messages"][0]["content"]["text"] == "Forecast for Rome?"
        # an argument error is the child's answer, under the parent's name
        bad = await client.call_tool("weather_lookup", {})
        assert bad.get("isError") is True


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_names_are_unknown(era: EraChoice) -> None:
    main = Server("main")
    main.mount(weather(), namespace="weather")
    async with Client(main, era=era) as client:
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("weather_nope", {})
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("other_lookup", {"city": "x"})
        with pytest.raises(Exception, match="not found"):
            await client.read_resource("data://weather/missing")


@pytest.mark.parametrize("era", ERAS)
async def test_completions_route_to_the_child(era: EraChoice) -> None:
    main = Server("main")
    main.mount(weather(), namespace="weather")
    async with Client(main, era=era) as client:
        assert "completions" in client.server_info.capabilities
        done = await client.complete(
            {"type": "ref/prompt", "name": "weather_forecast"}, "city", "p"
        )
        assert done["completion"]["values"] == ["paris", "perth"]
        done = await client.complete(
            {"type": "ref/resource", "uri": "data://weather/cities/{city}"}, "city", "o"
        )
        assert done["completion"]["values"] == ["oslo"]


class Recorder(Middleware):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.log.append(f"{self.name}>{ctx.params['name']}")
        result = await call_next(ctx)
        self.log.append(f"{self.name}<")
        return result

    async def on_list_tools(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        result = await call_next(ctx)
        if self.name == "child":  # the child hides a tool from its own list
            result = {**result, "tools": [t for t in result["tools"] if t["name"] != "hidden"]}
        return result


@pytest.mark.parametrize("era", ERAS)
async def test_middleware_of_both_servers_runs(era: EraChoice) -> None:
    log: list[str] = []
    child = Server("child", middleware=[Recorder("child", log)])

    @child.tool
    def add(a: int, b: int) -> int:
        return a + b

    @child.tool
    def hidden() -> str:
        return "h"

    main = Server("main", middleware=[Recorder("parent", log)])
    main.mount(child, namespace="math")
    async with Client(main, era=era) as client:
        assert [t["name"] for t in await client.list_tools()] == ["math_add"]
        assert first_text(await client.call_tool("math_add", {"a": 2, "b": 3})) == "5"
    # the parent's middleware sees the namespaced name, the child's its own, nested
    assert log == ["parent>math_add", "child>add", "child<", "parent<"]


async def next_change(sub: Any) -> str:
    with anyio.fail_after(5):
        async for note in sub:
            return str(note.method)
    raise AssertionError("the stream ended")


async def test_list_changed_crosses_the_mount_modern() -> None:
    child = Server("child")
    main = Server("main")

    @main.tool
    def own() -> str:
        return "x"

    main.mount(child, namespace="kid")
    async with Client(main, era="modern") as client:
        assert [t["name"] for t in await client.list_tools()] == ["own"]
        async with client.listen(tools=True, resources=True) as sub:

            @child.tool
            def late() -> str:
                return "late"

            assert await next_change(sub) == "notifications/tools/list_changed"
            names = [t["name"] for t in await client.list_tools(refresh=True)]
            assert names == ["own", "kid_late"]
            assert first_text(await client.call_tool("kid_late")) == "late"
            child.remove_tool("late")
            assert await next_change(sub) == "notifications/tools/list_changed"
            assert [t["name"] for t in await client.list_tools(refresh=True)] == ["own"]


async def test_list_changed_crosses_the_mount_legacy() -> None:
    child = Server("child")
    main = Server("main")

    @main.tool
    def own() -> str:
        return "x"

    seen: list[str] = []
    changed = anyio.Event()

    def on_note(note: Any) -> None:
        seen.append(note.method)
        changed.set()

    main.mount(child, namespace="kid")
    async with Client(main, era="legacy", on_notification=on_note) as client:
        await client.list_tools()

        @child.tool
        def late() -> str:
            return "late"

        with anyio.fail_after(5):
            await changed.wait()
        assert "notifications/tools/list_changed" in seen
        names = [t["name"] for t in await client.list_tools(refresh=True)]
        assert names == ["own", "kid_late"]


@pytest.mark.parametrize(
    ("options", "front_uri"),
    [({}, "data://w/config"), ({"prefix": "", "keep_uris": True}, "data://config")],
    ids=["namespaced", "kept"],
)
async def test_resource_updates_are_namespaced(options: dict[str, Any], front_uri: str) -> None:
    """Updates come back under the URI the parent serves (``keep_uris``: the child's)."""
    child = weather()
    main = Server("main")
    main.mount(child, namespace="w", **options)
    async with (
        Client(main, era="modern") as client,
        client.listen(resource_uris=[front_uri]) as sub,
    ):
        child.notify_resource_updated("data://config")
        with anyio.fail_after(5):
            async for note in sub:
                assert note.method == "notifications/resources/updated"
                assert note.params["uri"] == front_uri
                break


@pytest.mark.parametrize("era", ERAS)
async def test_elicitation_through_a_mount(era: EraChoice) -> None:
    child = Server("child")

    @child.tool
    async def confirm(action: str, ctx: Context) -> str:
        answer = await ctx.elicit(
            f"Really {action}?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        return f"{action}: {answer['action']} {answer['content']}"

    main = Server("main")
    main.mount(child, namespace="c")
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> ElicitResult:
        asked.append(params["message"])
        return {"action": "accept", "content": {"ok": True}}

    async with Client(main, era=era, elicitation=elicit) as client:
        result = await client.call_tool("c_confirm", {"action": "deploy"})
    assert first_text(result) == "deploy: accept {'ok': True}"
    assert asked == ["Really deploy?"]


@pytest.mark.parametrize("era", ERAS)
async def test_nested_mounts_and_unmount_at_run_time(era: EraChoice) -> None:
    leaf = weather()
    middle = Server("middle")
    middle.mount(leaf, namespace="w")
    top = Server("top")

    @top.tool
    def own() -> str:
        return "own"

    top.mount(middle, namespace="m")
    async with Client(top, era=era) as client:
        assert [t["name"] for t in await client.list_tools()] == ["own", "m_w_lookup"]
        assert first_text(await client.call_tool("m_w_lookup", {"city": "Kyiv"})) == "sunny in Kyiv"
        read = await client.read_resource("data://m/w/config")
        assert read["contents"][0]["text"] == "weather-config"
        done = await client.complete({"type": "ref/prompt", "name": "m_w_forecast"}, "city", "o")
        assert done["completion"]["values"] == ["oslo"]
        middle.unmount("w")
        assert [t["name"] for t in await client.list_tools(refresh=True)] == ["own"]
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("m_w_lookup", {"city": "Kyiv"})


def test_mount_rules() -> None:
    a, b = Server("a"), Server("b")
    a.mount(b, namespace="b")
    with pytest.raises(ValueError, match="cycle"):
        b.mount(a, namespace="a")
    with pytest.raises(ValueError, match="already mounted"):
        a.mount(Server("c"), namespace="b")
    with pytest.raises(ValueError, match="namespace"):
        a.mount(Server("d"), namespace="with space")
    with pytest.raises(KeyError):
        a.unmount("nope")


@pytest.mark.parametrize(
    "uri",
    ["data://config", "file:///etc/hosts", "urn:isbn:123", "http://h/p?q=1", "plain", "a://"],
)
def test_uri_namespacing_is_reversible(uri: str) -> None:
    wrapped = namespace_uri("ns", uri)
    assert wrapped != uri
    assert strip_uri("ns", wrapped) == uri
    assert strip_uri("other", wrapped) is None


def test_uri_namespacing_examples() -> None:
    assert namespace_uri("x", "data://config") == "data://x/config"
    assert namespace_uri("x", "file:///etc/hosts") == "file://x//etc/hosts"
    assert namespace_uri("x", "urn:isbn:1") == "urn:x/isbn:1"


async def test_the_parent_runs_its_mounted_children() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def child_life(server: Server) -> AsyncIterator[None]:
        events.append("child up")
        yield
        events.append("child down")

    @contextlib.asynccontextmanager
    async def parent_life(server: Server) -> AsyncIterator[str]:
        events.append("parent up")
        yield "parent state"
        events.append("parent down")

    child = Server("child", lifespan=child_life)
    main = Server("main", lifespan=parent_life)
    main.mount(child, namespace="kid")
    async with main.running():
        with anyio.fail_after(5):
            while "child up" not in events:
                await anyio.sleep(0.01)
        assert main.lifespan_state == "parent state"
        late = Server("late", lifespan=child_life)
        main.mount(late, namespace="late")  # mounted while running: started at once
        with anyio.fail_after(5):
            while events.count("child up") < 2:
                await anyio.sleep(0.01)
        main.unmount(late)
        with anyio.fail_after(5):
            while "child down" not in events:
                await anyio.sleep(0.01)
    assert events.count("child down") == 2
    assert events.index("parent down") < len(events) - 1  # the child stops after it


async def test_a_mounted_task_tool_is_followed_to_its_result() -> None:
    child = Server("child")

    @child.tool(task="optional")
    async def crunch(n: int) -> str:
        await anyio.sleep(0.05)
        return f"crunched {n}"

    main = Server("main")
    main.mount(child, namespace="kid")
    async with Client(main, era="modern", tasks=True) as client:
        assert "io.modelcontextprotocol/tasks" in client.server_info.capabilities["extensions"]
        task = await client.start_tool_task("kid_crunch", {"n": 7})
        assert not isinstance(task, dict), "the mounted tool ran as a task"
        assert task.id.startswith("kid~")
        with anyio.fail_after(10):
            result = await task
        assert first_text(result) == "crunched 7"
        # and call_tool follows the task by itself
        assert first_text(await client.call_tool("kid_crunch", {"n": 8})) == "crunched 8"
        with pytest.raises(Exception, match="nope"):
            await client.request("tasks/get", {"taskId": "kid~nope"})
