"""Our client against our server, in memory, over stdio and Streamable HTTP, in both eras.

HTTP talks to ``tests/conformance/server.py`` served with ``--http`` on a free loopback
port (a real process and socket); stdio spawns ``python -m mcpkit serve`` on the same file
for the feature sweep, the one test here whose subject includes the process boundary.
Everything else that is about the client's logic (input callbacks, progress, the era cache,
round limits, listen) runs on the same server object in memory, which encodes, frames and
serves every message through the stdio code path, so it breaks where stdio would.  The era
is forced per test with ``era=...``; ``era="auto"`` is tested separately.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from clientkit import FIXTURE_SERVER, REPO, ServerProcess, fixture_object

from mcpkit.client import (
    Client,
    CreateMessageResult,
    ElicitResult,
    EraCache,
    Notification,
    Root,
    ServerError,
    TooManyInputRounds,
    prompt_ref,
)
from mcpkit.transports.client_http import HttpTransport
from mcpkit.transports.memory import MemoryTransport
from mcpkit.types.versions import EraChoice
from support.schema import validate_definition
from support.servers import serve_argv

pytestmark = pytest.mark.anyio

COMBOS = [("memory", "modern"), ("memory", "legacy"), ("http", "modern"), ("http", "legacy")]
#: The feature sweep also runs over a real stdio process, both eras.
FEATURE_COMBOS = [*COMBOS, ("stdio", "modern"), ("stdio", "legacy")]
ROOTS: list[Root] = [{"uri": "file:///work/project", "name": "project"}]


def target_for(transport: str, http_server: ServerProcess, backend: str = "asyncio") -> Any:
    if transport == "memory":
        return fixture_object(backend)
    return serve_argv(FIXTURE_SERVER) if transport == "stdio" else http_server.url


class Answers:
    """Callbacks that record what the server asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def elicit(self, params: dict[str, Any]) -> ElicitResult:
        self.asked.append(("elicit", params))
        props = (params.get("requestedSchema") or {}).get("properties") or {}
        content = {
            name: "blue" if name == "color" else "Ada" if name == "name" else "ctx"
            for name, prop in props.items()
            if prop.get("type") == "string"
        }
        return {"action": "accept", "content": content}

    def sample(self, params: dict[str, Any]) -> CreateMessageResult:  # sync on purpose
        self.asked.append(("sample", params))
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "test-model",
        }

    def client(self, target: Any, era: EraChoice, **kw: Any) -> Client:
        return Client(
            target,
            era=era,
            cwd=REPO,
            elicitation=self.elicit,
            sampling=self.sample,
            roots=ROOTS,
            **kw,
        )


@pytest.fixture(params=COMBOS, ids=[f"{t}-{e}" for t, e in COMBOS])
def combo(request: pytest.FixtureRequest, http_server: ServerProcess) -> tuple[Any, EraChoice]:
    transport, era = request.param
    return target_for(transport, http_server), era


@pytest.mark.parametrize(
    ("transport", "era"), FEATURE_COMBOS, ids=[f"{t}-{e}" for t, e in FEATURE_COMBOS]
)
async def test_features(transport: str, era: EraChoice, http_server: ServerProcess) -> None:
    target = target_for(transport, http_server)
    with anyio.fail_after(30):
        async with Client(target, era=era, cwd=REPO) as client:
            assert client.era == era
            assert client.server_info.implementation["name"] == "mcpkit-conformance-server"
            assert client.server_info.supports("tools")
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            assert "test_simple_text" in tools and "test_input_required_result_elicitation" in tools
            result = await client.call_tool("test_simple_text")
            assert result["content"] == [
                {"type": "text", "text": "This is a simple text response for testing."}
            ]
            image = await client.call_tool("test_image_content")
            assert image["content"][0]["type"] == "image"
            failed = await client.call_tool("test_error_handling")
            assert failed.get("isError") is True
            with pytest.raises(ServerError) as info:
                await client.call_tool("no_such_tool")
            assert info.value.code == -32602 and "no_such_tool" in str(info.value)

            prompts = {p["name"] for p in await client.list_prompts()}
            assert "test_prompt_with_arguments" in prompts
            prompt = await client.get_prompt(
                "test_prompt_with_arguments", {"arg1": "x", "arg2": "y"}
            )
            assert "arg1='x'" in prompt["messages"][0]["content"]["text"]

            uris = {r["uri"] for r in await client.list_resources()}
            assert {"test://static-text", "test://static-binary"} <= uris
            templates = await client.list_resource_templates()
            assert templates[0]["uriTemplate"] == "test://template/{id}/data"
            text = await client.read_resource("test://static-text")
            assert text["contents"][0]["text"].startswith("This is the content")
            blob = await client.read_resource("test://static-binary", refresh=True)
            assert blob["contents"][0]["mimeType"] == "image/png" and blob["contents"][0]["blob"]
            templated = await client.read_resource("test://template/42/data")
            assert '"id":"42"' in templated["contents"][0]["text"]

            done = await client.complete(prompt_ref("test_prompt_with_arguments"), "arg1", "pa")
            assert done["completion"]["values"] == ["paris", "park", "party"]
            await client.ping()
            if era == "legacy":
                await client.set_logging_level("warning")
                await client.subscribe_resource("test://watched-resource")
                await client.unsubscribe_resource("test://watched-resource")
            else:
                discovered = await client.discover()
                assert "2026-07-28" in discovered["supportedVersions"]


async def test_input_callbacks(combo: tuple[Any, EraChoice]) -> None:
    """MRTR on the modern era, server->client requests on legacy: same callbacks."""
    target, era = combo
    answers = Answers()
    with anyio.fail_after(30):
        async with answers.client(target, era) as client:
            assert set(client.capabilities) == {"elicitation", "sampling", "roots"}
            named = await client.call_tool("test_input_required_result_elicitation")
            assert named["content"][0]["text"] == "Hello, Ada!"
            sampled = await client.call_tool("test_input_required_result_sampling")
            assert "Paris" in sampled["content"][0]["text"]
            rooted = await client.call_tool("test_input_required_result_list_roots")
            assert "file:///work/project" in rooted["content"][0]["text"]
            two = await client.call_tool("test_input_required_result_multi_round")
            assert two["content"][0]["text"] == "Ada likes blue."
            many = await client.call_tool("test_input_required_result_multiple_inputs")
            assert many["content"][0]["text"] == "All inputs received."
            state = await client.call_tool("test_input_required_result_request_state")
            assert state["content"][0]["text"] == "Confirmed with state-ok"
            if era == "modern":
                prompt = await client.get_prompt("test_input_required_result_prompt")
                assert "ctx" in prompt["messages"][0]["content"]["text"]
    kinds = [kind for kind, _ in answers.asked]
    assert kinds.count("elicit") >= 5 and kinds.count("sample") == 2


async def test_progress_and_logs(combo: tuple[Any, EraChoice]) -> None:
    target, era = combo
    logs: list[dict[str, Any]] = []
    progress: list[dict[str, Any]] = []
    with anyio.fail_after(30):
        async with Client(
            target, era=era, cwd=REPO, log_level="debug", on_log=logs.append
        ) as client:
            await client.call_tool("test_tool_with_progress", on_progress=progress.append)
            await client.call_tool("test_tool_with_logging")
    assert [p["progress"] for p in progress] == [0, 50, 100]
    assert [entry["data"] for entry in logs][-3:] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_auto_era_probes_and_is_remembered(
    transport: str, http_server: ServerProcess
) -> None:
    cache = EraCache()
    target = target_for(transport, http_server)
    with anyio.fail_after(30):
        async with Client(target, cwd=REPO, era_cache=cache) as client:
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
            assert cache.get(client.transport.server_key) == ("modern", "2026-07-28")
        cache.remember(client.transport.server_key, "legacy", "2025-11-25")
        async with Client(target, cwd=REPO, era_cache=cache) as again:
            assert again.era == "legacy"  # the remembered era is used without probing


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_input_round_limit(transport: str, http_server: ServerProcess) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with answers.client(
            target_for(transport, http_server), "modern", max_input_rounds=1
        ) as client:
            with pytest.raises(TooManyInputRounds):
                await client.call_tool("test_input_required_result_multi_round")


async def test_missing_callback_is_a_clear_server_error(http_server: ServerProcess) -> None:
    with anyio.fail_after(30):
        async with Client(http_server.url, era="modern") as client:
            assert client.capabilities == {}
            with pytest.raises(ServerError) as info:
                await client.call_tool("test_input_required_result_elicitation")
    assert info.value.code == -32021


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_listen_modern(transport: str, http_server: ServerProcess) -> None:
    with anyio.fail_after(30):
        async with Client(target_for(transport, http_server), era="modern", cwd=REPO) as client:
            await client.list_tools()
            assert client.cache is not None and len(client.cache) == 1
            async with client.listen(tools=True, prompts=True) as sub:
                assert sub.filter == {"toolsListChanged": True, "promptsListChanged": True}
                await client.call_tool("test_trigger_tool_change")
                note = await sub.__anext__()
                assert note.method == "notifications/tools/list_changed"
                assert note.params["_meta"]["io.modelcontextprotocol/subscriptionId"] is not None
                assert len(client.cache) == 0  # the tools list was invalidated
                await client.call_tool("test_trigger_prompt_change")
                async for note in sub:  # the tool change sent one more tools/list_changed
                    if note.method != "notifications/tools/list_changed":
                        break
                assert note.method == "notifications/prompts/list_changed"
            assert sub.ended == "closed by the client"
            # The connection is still fine after the listen ended.
            assert (await client.call_tool("test_simple_text"))["content"]


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_listen_legacy_emulation(transport: str, http_server: ServerProcess) -> None:
    seen: list[Notification] = []
    with anyio.fail_after(30):
        client = Client(
            target_for(transport, http_server), era="legacy", cwd=REPO, on_notification=seen.append
        )
        watched = ["test://watched-resource"]
        async with client, client.listen(tools=True, resource_uris=watched) as sub:
            assert sub.filter == {"toolsListChanged": True, "resourceSubscriptions": watched}
            await client.call_tool("test_trigger_tool_change")
            note = await sub.__anext__()
            assert note.method == "notifications/tools/list_changed"
    assert any(n.method == "notifications/tools/list_changed" for n in seen)


async def test_ttl_cache(http_server: ServerProcess) -> None:
    with anyio.fail_after(30):
        async with Client(http_server.url, era="modern") as client:
            assert client.cache is not None
            first = await client.list_tools()
            second = await client.list_tools()
            assert first == second and client.cache.hits == 1
            await client.list_tools(refresh=True)
            assert client.cache.hits == 1
            await client.read_resource("test://static-text")
            await client.read_resource("test://static-text")
            assert client.cache.hits == 2
    async with Client(http_server.url, era="legacy") as legacy:
        await legacy.list_tools()
        await legacy.list_tools()
        assert legacy.cache is not None and legacy.cache.hits == 0  # no ttlMs: not cached


async def test_x_mcp_header_is_mirrored(http_server: ServerProcess) -> None:
    """The server checks Mcp-Param-Region against the body and rejects a mismatch."""
    with anyio.fail_after(30):
        async with Client(http_server.url, era="modern") as client:
            # Not listed yet: the first try goes without the header, the server answers
            # -32020, the client re-fetches tools/list and retries with it.
            first = await client.call_tool("test_x_mcp_header", {"region": " Zürich "})
            assert first["content"][0]["text"] == "region= Zürich "
            again = await client.call_tool("test_x_mcp_header", {"region": "eu-west1"})
            assert again["content"][0]["text"] == "region=eu-west1"


class Recording:
    """A transport wrapper that records every request and notification the client sends."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def __aenter__(self) -> Recording:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self.inner.__aexit__(*exc)

    async def request(self, method: str, params: Any, **kw: Any) -> Any:
        self.sent.append(
            {
                "jsonrpc": "2.0",
                "id": len(self.sent) + 1,
                "method": method,
                **({"params": params} if params is not None else {}),
            }
        )
        return await self.inner.request(method, params, **kw)

    async def notify(self, method: str, params: Any = None, **kw: Any) -> Any:
        self.sent.append(
            {
                "jsonrpc": "2.0",
                "method": method,
                **({"params": params} if params is not None else {}),
            }
        )
        return await self.inner.notify(method, params, **kw)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_every_message_is_schema_valid(era: str, http_server: ServerProcess) -> None:
    answers = Answers()
    transport = Recording(
        MemoryTransport(fixture_object("asyncio"))
        if era == "legacy"
        else HttpTransport(http_server.url)
    )
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with anyio.fail_after(30):
        async with answers.client(
            transport,
            "auto" if era == "modern" else "legacy",
            trace_context=lambda: {"traceparent": traceparent},
        ) as client:
            await client.list_tools()
            await client.call_tool("test_input_required_result_multiple_inputs")
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            await client.read_resource("test://static-text")
            await client.complete(prompt_ref("test_prompt_with_arguments"), "arg1", "p")
    revision = "2026-07-28" if era == "modern" else "2025-11-25"
    assert transport.sent
    for message in transport.sent:
        definition = "ClientRequest" if "id" in message else "ClientNotification"
        validate_definition(revision, definition, message)
        if era == "modern":
            meta = message["params"]["_meta"]
            assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
            assert meta["traceparent"].startswith("00-0af7")
            assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcpkit-client"
    retries = [m for m in transport.sent if "inputResponses" in m.get("params", {})]
    assert (len(retries) == 1) == (era == "modern")


@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_on_trio(transport: str, http_server: ServerProcess) -> None:
    answers = Answers()
    target = target_for(transport, http_server, "trio")
    with anyio.fail_after(30):
        async with answers.client(target, "auto") as client:
            assert client.era == "modern"
            assert len(await client.list_tools()) > 5
            named = await client.call_tool("test_input_required_result_elicitation")
            assert named["content"][0]["text"] == "Hello, Ada!"
        async with answers.client(target, "legacy") as client:
            named = await client.call_tool("test_input_required_result_elicitation")
            assert named["content"][0]["text"] == "Hello, Ada!"
