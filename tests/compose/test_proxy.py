"""``proxy(target)`` against real upstreams: a legacy-only stdio process and a modern-only
HTTP server on 127.0.0.1 (a subprocess), each with a front client of both eras.  Input
requests (MRTR rounds and legacy server->client elicitation) cross the proxy in every
pairing; list changes of the upstream reach the front; several ``mcpServers`` become one
server with namespaced proxies."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client, ElicitResult
from mcpkit.compose import ProxyServer, proxy
from mcpkit.transports.http import McpHttpApp
from mcpkit.types.versions import EraChoice
from support.mcp import first_text
from support.servers import ThreadServer, http_subprocess

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).parent / "servers" / "upstream.py"
STDIO_LEGACY = [
    sys.executable, "-m", "mcpkit", "serve", str(UPSTREAM), "--no-modern", "--state", "memory:",
]  # fmt: skip
FRONTS = ["modern", "legacy"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # subprocesses and uvicorn


@pytest.fixture(autouse=True)
def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a relative path a test writes lands in its own folder


@pytest.fixture(scope="module")
def modern_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("upstream")
    with http_subprocess(workdir, UPSTREAM, "--no-legacy", "--state", "memory:") as upstream:
        yield upstream.url


async def elicit(params: dict[str, Any]) -> ElicitResult:
    return {"action": "accept", "content": {"ok": params["message"] == "Really deploy?"}}


async def exercise(front: Server | str, era: EraChoice, upstream_era: str) -> None:
    """Every kind of request through the proxy, from a front client of ``era`` (in
    memory, or over HTTP when ``front`` is a URL)."""
    async with Client(front, era=era, elicitation=elicit) as client:
        names = {t["name"] for t in await client.list_tools()}
        assert {"echo", "era", "confirm", "grow"} <= names
        assert first_text(await client.call_tool("echo", {"text": "hi", "times": 2})) == "hi hi"
        assert first_text(await client.call_tool("era")) == upstream_era
        bad = await client.call_tool("echo", {"times": "x"})
        assert bad.get("isError") is True
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("nope")
        read = await client.read_resource("data://config")
        assert read["contents"][0]["text"] == "upstream-config"
        read = await client.read_resource("data://items/7")
        assert read["contents"][0]["text"] == "item:7"
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["data://items/{item}"]
        prompt = await client.get_prompt("greet", {"who": "Ada"})
        assert prompt["messages"][0]["content"]["text"] == "Hello Ada"
        done = await client.complete({"type": "ref/prompt", "name": "greet"}, "who", "a")
        assert done["completion"]["values"] == ["ada", "alan"]
        # input requested by the upstream, answered by the front client
        result = await client.call_tool("confirm", {"action": "deploy"})
        assert first_text(result) == "deploy: accept {'ok': True}"


@pytest.mark.parametrize("era", FRONTS)
async def test_proxy_of_a_legacy_stdio_server(era: EraChoice) -> None:
    front = proxy(STDIO_LEGACY)
    assert isinstance(front, ProxyServer)
    await exercise(front, era, "legacy")


@pytest.mark.parametrize("era", FRONTS)
async def test_proxy_of_a_modern_http_server(era: EraChoice, modern_http: str) -> None:
    front = proxy(modern_http)
    await exercise(front, era, "modern")


@pytest.mark.parametrize("era", FRONTS)
async def test_a_proxy_served_over_http(era: EraChoice) -> None:
    """The whole stack: an HTTP front (both eras) -> proxy -> a legacy stdio upstream."""
    with ThreadServer(McpHttpApp(proxy(STDIO_LEGACY))) as served:
        await exercise(served.url, era, "legacy")


async def test_modern_passthrough_keeps_the_upstreams_rounds(modern_http: str) -> None:
    """Modern on both sides: the InputRequiredResult is the upstream's own."""
    front = proxy(modern_http)
    async with Client(front, era="modern", elicitation=elicit) as client:
        first = await client.request(
            "tools/call", {"name": "confirm", "arguments": {"action": "x"}}
        )
        assert first["resultType"] == "input_required"
        (key, request), *_ = first["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        again = await client.request(
            "tools/call",
            {
                "name": "confirm",
                "arguments": {"action": "x"},
                "inputResponses": {key: {"action": "decline"}},
                "requestState": first["requestState"],
            },
        )
        assert again["content"][0]["text"] == "x: decline None"


async def test_bridged_rounds_are_sealed_by_the_proxy() -> None:
    """Modern front, legacy upstream: the proxy's own requestState; tampering is refused."""
    front = proxy(STDIO_LEGACY)
    async with Client(front, era="modern", elicitation=elicit) as client:
        first = await client.request(
            "tools/call", {"name": "confirm", "arguments": {"action": "y"}}
        )
        assert first["resultType"] == "input_required"
        key = next(iter(first["inputRequests"]))
        with pytest.raises(Exception, match="requestState"):
            await client.request(
                "tools/call",
                {
                    "name": "confirm",
                    "arguments": {"action": "y"},
                    "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
                    "requestState": first["requestState"][:-4] + "AAAA",
                },
            )
        done = await client.request(
            "tools/call",
            {
                "name": "confirm",
                "arguments": {"action": "y"},
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
                "requestState": first["requestState"],
            },
        )
        assert done["content"][0]["text"] == "y: accept {'ok': True}"


async def next_note(notes: list[str], changed: anyio.Event) -> None:
    with anyio.fail_after(10):
        await changed.wait()


@pytest.mark.parametrize("upstream", ["stdio-legacy", "http-modern"])
@pytest.mark.parametrize("era", FRONTS)
async def test_upstream_list_changes_reach_the_front(
    era: EraChoice, upstream: str, modern_http: str
) -> None:
    target: Any = STDIO_LEGACY if upstream == "stdio-legacy" else modern_http
    front = proxy(target)
    seen: list[str] = []
    changed = anyio.Event()

    def on_note(note: Any) -> None:
        if note.method == "notifications/tools/list_changed":
            seen.append(note.method)
            changed.set()

    tool = f"added_{era}"
    async with Client(front, era=era, on_notification=on_note) as client:
        await client.list_tools()
        if era == "modern":
            async with client.listen(tools=True) as sub:
                assert first_text(await client.call_tool("grow", {"name": tool})) == "grown"
                with anyio.fail_after(10):
                    async for note in sub:
                        assert note.method == "notifications/tools/list_changed"
                        break
        else:
            assert first_text(await client.call_tool("grow", {"name": tool})) == "grown"
            with anyio.fail_after(10):
                await changed.wait()
        names = {t["name"] for t in await client.list_tools(refresh=True)}
        assert tool in names
        assert first_text(await client.call_tool(tool)) == f"I am {tool}"


@pytest.mark.parametrize("era", FRONTS)
async def test_mcp_servers_dict_is_a_multi_server_proxy(era: EraChoice, modern_http: str) -> None:
    config = {
        "mcpServers": {
            "old": {"command": STDIO_LEGACY[0], "args": STDIO_LEGACY[1:]},
            "new": {"url": modern_http},
        }
    }
    front = proxy(config, name="both")
    async with Client(front, era=era, elicitation=elicit) as client:
        names = {t["name"] for t in await client.list_tools()}
        assert {"old_echo", "new_echo", "old_confirm", "new_confirm"} <= names
        assert first_text(await client.call_tool("old_era")) == "legacy"
        assert first_text(await client.call_tool("new_era")) == "modern"
        result = await client.call_tool("old_confirm", {"action": "deploy"})
        assert first_text(result) == "deploy: accept {'ok': True}"
        result = await client.call_tool("new_confirm", {"action": "deploy"})
        assert first_text(result) == "deploy: accept {'ok': True}"
        read = await client.read_resource("data://new/items/3")
        assert read["contents"][0]["text"] == "item:3"


async def test_a_client_as_target() -> None:
    front = proxy(Client(STDIO_LEGACY))
    async with Client(front, era="modern", elicitation=elicit) as client:
        result = await client.call_tool("confirm", {"action": "deploy"})
        assert first_text(result) == "deploy: accept {'ok': True}"


async def test_an_unreachable_upstream_is_a_clear_error() -> None:
    front = proxy([sys.executable, "-c", "import sys; sys.exit(3)"], connect_timeout=20)
    async with front.running():
        with pytest.raises(Exception, match="unavailable"):
            await front.call("tools/list")


@pytest.mark.parametrize("upstream", ["stdio-legacy", "http-modern"])
@pytest.mark.parametrize("era", FRONTS)
async def test_progress_crosses_the_proxy(era: EraChoice, upstream: str, modern_http: str) -> None:
    target: Any = STDIO_LEGACY if upstream == "stdio-legacy" else modern_http
    seen: list[tuple[float, str]] = []

    def on_progress(update: dict[str, Any]) -> None:
        seen.append((update["progress"], update.get("message", "")))

    async with Client(proxy(target), era=era) as client:
        result = await client.call_tool("slow", {"steps": 3}, on_progress=on_progress)
    assert first_text(result) == "done"
    assert seen == [(1, "step 1"), (2, "step 2"), (3, "step 3")]


@pytest.mark.parametrize("era", FRONTS)
async def test_a_dead_stdio_upstream_is_restarted(era: EraChoice) -> None:
    front = cast(ProxyServer, proxy(STDIO_LEGACY))
    async with Client(front, era=era) as client:
        with pytest.raises(Exception, match="unavailable"):
            await client.call_tool("die")
        first_error = front.error
        assert first_error is not None
        with anyio.fail_after(30):  # until the restarted upstream answers
            while True:
                try:
                    result = await client.call_tool("echo", {"text": "back"})
                    break
                except Exception as exc:
                    assert "unavailable" in str(exc)
                    await anyio.sleep(0.1)
        assert first_text(result) == "back"


@pytest.mark.parametrize("upstream", ["stdio-legacy", "http-modern"])
@pytest.mark.parametrize("era", FRONTS)
async def test_resource_updates_cross_a_mounted_proxy(
    era: EraChoice, upstream: str, modern_http: str
) -> None:
    """Watching ``data://up/config`` on the front subscribes ``data://config`` upstream
    (through the mount and the proxy); the upstream's update comes back namespaced."""
    target: Any = STDIO_LEGACY if upstream == "stdio-legacy" else modern_http
    front = Server("front")
    front.mount(proxy(target), namespace="up")
    updates: list[str] = []
    updated = anyio.Event()

    def on_note(note: Any) -> None:
        if note.method == "notifications/resources/updated":
            updates.append(note.params["uri"])
            updated.set()

    async def touch_until_updated(client: Client) -> None:
        # The upstream subscription is made in the background: touch until it is live.
        with anyio.fail_after(20):
            while not updated.is_set():
                await client.call_tool("up_touch")
                with anyio.move_on_after(0.2):
                    await updated.wait()

    async with Client(front, era=era, on_notification=on_note) as client:
        assert client.server_info.capabilities["resources"].get("subscribe") is True
        if era == "modern":
            async with (
                client.listen(resource_uris=["data://up/config"]) as sub,
                anyio.create_task_group() as tg,
            ):

                async def read_stream() -> None:
                    async for note in sub:
                        on_note(note)
                        return

                tg.start_soon(read_stream)
                await touch_until_updated(client)
        else:
            await client.subscribe_resource("data://up/config")
            await touch_until_updated(client)
    assert set(updates) == {"data://up/config"}


async def test_tasks_of_a_modern_upstream_pass_through(modern_http: str) -> None:
    front = Server("front")
    front.mount(proxy(modern_http), namespace="up")  # and through a mount
    async with Client(front, era="modern", tasks=True) as client:
        assert "io.modelcontextprotocol/tasks" in client.server_info.capabilities["extensions"]
        task = await client.start_tool_task("up_crunch", {"n": 3})
        assert not isinstance(task, dict), "the upstream ran it as a task"
        assert task.id.startswith("up~")
        with anyio.fail_after(20):
            result = await task
        assert first_text(result) == "crunched 3"
    async with Client(proxy(STDIO_LEGACY), era="modern", tasks=True) as client:
        # a legacy upstream has no 2026 tasks: the call simply answers
        assert "extensions" not in client.server_info.capabilities
        assert first_text(await client.call_tool("crunch", {"n": 4})) == "crunched 4"


@pytest.mark.parametrize("era", FRONTS)
async def test_mcp_param_headers_reach_an_http_upstream(era: EraChoice, modern_http: str) -> None:
    async with Client(proxy(modern_http), era=era) as client:
        result = await client.call_tool("regional", {"region": "eu-west"})
    assert first_text(result) == "region eu-west, header eu-west"


@pytest.mark.parametrize("upstream", ["stdio-legacy", "http-modern"])
async def test_concurrent_calls_share_one_upstream_connection(
    upstream: str, modern_http: str
) -> None:
    target: Any = STDIO_LEGACY if upstream == "stdio-legacy" else modern_http
    front = cast(ProxyServer, proxy(target))
    answers: dict[int, str] = {}
    async with Client(front, era="modern") as one, Client(front, era="legacy") as two:
        connection = front.upstream
        assert connection is not None

        async def ask(n: int) -> None:
            client = one if n % 2 else two
            answers[n] = first_text(await client.call_tool("echo", {"text": f"n{n}"}))

        async with anyio.create_task_group() as tg:
            for n in range(30):
                tg.start_soon(ask, n)
        assert front.upstream is connection  # one pooled connection served them all
    assert answers == {n: f"n{n}" for n in range(30)}


async def test_a_proxy_serves_many_connections_in_turn_and_at_once() -> None:
    """The obvious pytest fixture: one proxy object, a client connecting, leaving and
    connecting again, then two at once.  Each lifespan gets a live upstream."""
    front = proxy(STDIO_LEGACY)

    async def echo(client: Client, text: str) -> None:
        assert first_text(await client.call_tool("echo", {"text": text})) == text

    for turn in ("first", "second"):
        async with Client(front) as client:
            await echo(client, turn)
    async with Client(front) as one, Client(front) as two:
        await echo(one, "one")
        await echo(two, "two")
    async with Client(front) as client:
        await echo(client, "after")


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_proxy_of_a_modern_http_server_runs_on_trio(modern_http: str) -> None:
    """The fast lane is asyncio's: on trio a modern call takes the client's own wire, with
    the same answer (the upstream's rounds passed through)."""
    async with Client(proxy(modern_http), era="modern", elicitation=elicit) as client:
        result = await client.call_tool("echo", {"text": "hi", "times": 2})
        assert first_text(result) == "hi hi"
        first = await client.request(
            "tools/call", {"name": "confirm", "arguments": {"action": "x"}}
        )
        assert first["resultType"] == "input_required"
