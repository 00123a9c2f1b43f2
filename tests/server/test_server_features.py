"""Resources, templates, prompts, completions, pagination, caching fields, capabilities and
lifespan, in-process.  Every result is validated against the official schema."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
import pytest
from pydantic import Field

from mcpkit import Context, EmbeddedResource, Server
from support.inproc import call, call_error, legacy, modern

pytestmark = pytest.mark.anyio


def resource_server() -> Server:
    server = Server("resources", cache_ttl_ms=5000, cache_scope="private")

    @server.resource("test://text", name="text", description="Plain text", mime_type="text/plain")
    def text() -> str:
        return "hello"

    @server.resource("test://blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\xffdata"

    @server.resource("test://json")
    def as_json() -> dict[str, Any]:
        return {"k": [1, 2]}

    @server.resource("test://short-lived", ttl_ms=10)
    def short() -> str:
        return "soon stale"

    @server.resource("test://hidden", listed=False)
    def hidden() -> str:
        return "not in the list"

    @server.resource("test://users/{user}/files/{+path}", mime_type="text/plain")
    def user_file(user: str, path: str) -> str:
        if user == "ghost":
            raise KeyError(user)
        return f"{user}:{path}"

    @server.resource("test://search{?q,limit}")
    def search(q: str = "", limit: str = "10") -> str:
        return f"q={q} limit={limit}"

    @server.resource("test://ctx/{id}")
    async def with_context(id: str, ctx: Context) -> str:
        return f"{id} via {ctx.method}"

    return server


# --------------------------------------------------------------------------- resources


async def test_resources_list_and_templates_list() -> None:
    server = resource_server()
    listed = await call(server, "resources/list")
    uris = [r["uri"] for r in listed["resources"]]
    assert uris == ["test://text", "test://blob", "test://json", "test://short-lived"]
    first = listed["resources"][0]
    assert first == {
        "uri": "test://text",
        "name": "text",
        "description": "Plain text",
        "mimeType": "text/plain",
    }
    templates = await call(server, "resources/templates/list")
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
        "test://users/{user}/files/{+path}",
        "test://search{?q,limit}",
        "test://ctx/{id}",
    ]


async def test_read_text_blob_and_json() -> None:
    server = resource_server()
    text = await call(server, "resources/read", {"uri": "test://text"})
    assert text["contents"] == [{"uri": "test://text", "text": "hello", "mimeType": "text/plain"}]
    blob = await call(server, "resources/read", {"uri": "test://blob"})
    assert base64.b64decode(blob["contents"][0]["blob"]) == b"\x00\xffdata"
    assert blob["contents"][0]["mimeType"] == "application/octet-stream"
    data = await call(server, "resources/read", {"uri": "test://json"})
    assert data["contents"][0]["mimeType"] == "application/json"
    hidden = await call(server, "resources/read", {"uri": "test://hidden"})
    assert hidden["contents"][0]["text"] == "not in the list"


async def test_template_variables_are_passed() -> None:
    server = resource_server()
    result = await call(server, "resources/read", {"uri": "test://users/ann/files/a/b%20c.txt"})
    assert result["contents"] == [
        {
            "uri": "test://users/ann/files/a/b%20c.txt",
            "text": "ann:a/b c.txt",
            "mimeType": "text/plain",
        }
    ]
    query = await call(server, "resources/read", {"uri": "test://search?q=mcp"})
    assert query["contents"][0]["text"] == "q=mcp limit=10"
    ctx = await call(server, "resources/read", {"uri": "test://ctx/9"})
    assert ctx["contents"][0]["text"] == "9 via resources/read"


@pytest.mark.parametrize("uri", ["test://nope", "test://users/ghost/files/x", "other://text"])
async def test_resource_not_found_is_32602_modern_and_32002_legacy(uri: str) -> None:
    server = resource_server()
    err = await call_error(server, "resources/read", {"uri": uri}, code=-32602)
    assert uri in err.message
    err = await call_error(server, "resources/read", {"uri": uri}, legacy(), code=-32002)
    assert err.data == {"uri": uri}


async def test_read_needs_a_string_uri() -> None:
    await call_error(resource_server(), "resources/read", {"uri": 5}, code=-32602)
    await call_error(resource_server(), "resources/read", {}, code=-32602)


async def test_cache_fields_only_on_modern_results() -> None:
    server = resource_server()
    for method, params in [
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "test://text"}),
        ("server/discover", {}),
    ]:
        result = await call(server, method, params)
        assert result["ttlMs"] == 5000, method
        assert result["cacheScope"] == "private", method
        assert result["resultType"] == "complete"
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "resources"
    short = await call(server, "resources/read", {"uri": "test://short-lived"})
    assert short["ttlMs"] == 10
    for method, params in [("resources/list", {}), ("resources/read", {"uri": "test://text"})]:
        result = await call(server, method, params, legacy())
        assert not {"ttlMs", "cacheScope", "resultType"} & set(result), method


# --------------------------------------------------------------------------- prompts


def prompt_server() -> Server:
    server = Server("prompts")

    @server.prompt
    def simple() -> str:
        """A simple prompt."""
        return "Say hi."

    @server.prompt(title="With arguments")
    def with_args(
        topic: Annotated[str, Field(description="What to write about")],
        tone: str = "neutral",
    ) -> str:
        return f"Write about {topic} in a {tone} tone."

    @server.prompt
    def conversation(question: str) -> list[Any]:
        return [
            {"role": "user", "content": EmbeddedResource("test://doc", text="ctx").to_wire()},
            {"role": "assistant", "content": "Noted."},
            question,
        ]

    @server.completion
    def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> Any:
        if ref.get("type") == "ref/resource":
            return {"values": ["r1"], "total": 1, "hasMore": False}
        if argument["name"] == "tone":
            return [t for t in ("neutral", "nice", "nasty") if t.startswith(argument["value"])]
        if argument["name"] == "topic":
            return [f"topic-{i}" for i in range(150)]
        return []

    return server


async def test_prompts_list_with_arguments() -> None:
    prompts = {p["name"]: p for p in (await call(prompt_server(), "prompts/list"))["prompts"]}
    assert prompts["simple"]["description"] == "A simple prompt."
    assert prompts["simple"]["arguments"] == []
    assert prompts["with_args"]["title"] == "With arguments"
    assert prompts["with_args"]["arguments"] == [
        {"name": "topic", "required": True, "description": "What to write about"},
        {"name": "tone", "required": False},
    ]


async def test_prompts_get_messages() -> None:
    server = prompt_server()
    simple = await call(server, "prompts/get", {"name": "simple"})
    assert simple["messages"] == [{"role": "user", "content": {"type": "text", "text": "Say hi."}}]
    assert simple["description"] == "A simple prompt."
    got = await call(server, "prompts/get", {"name": "with_args", "arguments": {"topic": "MCP"}})
    assert got["messages"][0]["content"]["text"] == "Write about MCP in a neutral tone."
    convo = await call(
        server, "prompts/get", {"name": "conversation", "arguments": {"question": "Why?"}}
    )
    assert [m["role"] for m in convo["messages"]] == ["user", "assistant", "user"]
    assert convo["messages"][0]["content"]["type"] == "resource"
    assert convo["messages"][2]["content"] == {"type": "text", "text": "Why?"}


@pytest.mark.parametrize(
    "params",
    [
        {"name": "nope"},
        {"name": 3},
        {},
        {"name": "with_args"},  # missing required argument
        {"name": "with_args", "arguments": ["x"]},
        # Not an object, for a prompt that needs no argument: refused as tools/call refuses
        # them, not read as "no arguments".
        {"name": "simple", "arguments": []},
        {"name": "simple", "arguments": ""},
        {"name": "simple", "arguments": 0},
    ],
)
async def test_prompts_get_errors(params: dict[str, Any]) -> None:
    await call_error(prompt_server(), "prompts/get", params, code=-32602)


# --------------------------------------------------------------------------- completions


async def test_completion_values() -> None:
    server = prompt_server()
    ref = {"type": "ref/prompt", "name": "with_args"}
    result = await call(
        server, "completion/complete", {"ref": ref, "argument": {"name": "tone", "value": "n"}}
    )
    assert result["completion"] == {
        "values": ["neutral", "nice", "nasty"],
        "total": 3,
        "hasMore": False,
    }
    many = await call(
        server, "completion/complete", {"ref": ref, "argument": {"name": "topic", "value": ""}}
    )
    assert len(many["completion"]["values"]) == 100
    assert many["completion"]["total"] == 150 and many["completion"]["hasMore"] is True
    resource = await call(
        server,
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "test://x/{id}"},
            "argument": {"name": "id", "value": ""},
            "context": {"arguments": {"a": "b"}},
        },
    )
    assert resource["completion"]["values"] == ["r1"]


@pytest.mark.parametrize(
    "params",
    [
        {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
        {"ref": "with_args", "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "with_args"}},
        pytest.param(
            {
                "ref": {"type": "ref/prompt", "name": ["with_args"]},
                "argument": {"name": "a", "value": ""},
            },
            id="unhashable-prompt-name",
        ),
    ],
)
async def test_completion_errors(params: dict[str, Any]) -> None:
    await call_error(prompt_server(), "completion/complete", params, code=-32602)


# --------------------------------------------------------------------------- pagination


def paged_server(count: int, page_size: int) -> Server:
    server = Server("paged", page_size=page_size)
    for i in range(count):
        server.tool(lambda: "x", name=f"tool_{i:02d}")
        server.prompt(lambda: "p", name=f"prompt_{i:02d}")
        server.resource(f"test://r/{i:02d}")(lambda: "r")
    return server


@pytest.mark.parametrize(
    ("method", "key"),
    [("tools/list", "tools"), ("prompts/list", "prompts"), ("resources/list", "resources")],
)
async def test_pagination_walks_every_item_once(method: str, key: str) -> None:
    server = paged_server(7, 3)
    seen: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {"cursor": cursor} if cursor is not None else {}
        page = await call(server, method, params)
        assert len(page[key]) <= 3
        seen += page[key]
        pages += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            break
        assert isinstance(cursor, str) and cursor
        assert page["ttlMs"] >= 0 and page["cacheScope"] == "public"  # same on every page
    assert pages == 3
    assert len(seen) == 7 and len({str(item) for item in seen}) == 7


async def test_empty_cursor_is_the_first_page() -> None:
    server = paged_server(5, 2)
    first = await call(server, "tools/list")
    assert await call(server, "tools/list", {"cursor": ""}) == first


async def test_no_cursor_when_everything_fits() -> None:
    assert "nextCursor" not in await call(paged_server(3, 3), "tools/list")


@pytest.mark.parametrize("cursor", ["garbage!", "x" * 1000, 5, ["a"], "bzo5OTk5"])
async def test_invalid_cursor_is_invalid_params(cursor: Any) -> None:
    await call_error(paged_server(5, 2), "tools/list", {"cursor": cursor}, code=-32602)


async def test_listing_follows_registration_changes() -> None:
    server = paged_server(2, 10)
    assert len((await call(server, "tools/list"))["tools"]) == 2
    server.tool(lambda: "y", name="late")
    assert [t["name"] for t in (await call(server, "tools/list"))["tools"]][-1] == "late"
    server.remove_tool("late")
    assert len((await call(server, "tools/list"))["tools"]) == 2


# --------------------------------------------------------------------------- capabilities


async def test_empty_server_has_no_feature_capabilities() -> None:
    server = Server("empty")
    discover = await call(server, "server/discover")
    caps = discover["capabilities"]
    assert not {"tools", "prompts", "resources", "completions"} & set(caps)
    assert discover["supportedVersions"][0] == "2026-07-28"
    assert "2025-11-25" in discover["supportedVersions"]
    unserved: list[tuple[str, dict[str, Any]]] = [
        ("tools/list", {}),
        ("tools/call", {"name": "x"}),
        ("prompts/list", {}),
        ("resources/list", {}),
        ("resources/read", {"uri": "test://x"}),
        ("completion/complete", {"ref": {}, "argument": {}}),
    ]
    for method, params in unserved:
        await call_error(server, method, params, code=-32601)
        await call_error(server, method, params, legacy(), code=-32601)


async def test_capabilities_follow_registrations() -> None:
    server = Server("growing", instructions="Use me well.")
    server.tool(lambda: "x", name="t")
    caps = (await call(server, "server/discover"))["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert "prompts" not in caps and "resources" not in caps
    server.prompt(lambda: "p", name="p")
    server.resource("test://r/{id}")(lambda id: id)
    server.completion(lambda ref, argument, context: [])
    discover = await call(server, "server/discover")
    assert {"tools", "prompts", "resources", "completions"} <= set(discover["capabilities"])
    assert discover["capabilities"]["resources"]["listChanged"] is True
    assert discover["instructions"] == "Use me well."


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "bogus/method",
        "notifications/initialized",
        "sampling/createMessage",
    ],
)
async def test_methods_outside_the_modern_era_are_not_found(method: str) -> None:
    await call_error(prompt_server(), method, {}, code=-32601)


async def test_discover_is_modern_only() -> None:
    await call_error(prompt_server(), "server/discover", {}, legacy(), code=-32601)


# --------------------------------------------------------------------------- lifespan


async def test_lifespan_is_entered_once_for_many_calls_and_nested_runs() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        events.append("enter")
        yield {"db": "connected"}
        events.append("exit")

    server = Server("life", lifespan=lifespan)

    @server.tool
    def state(ctx: Context) -> str:
        return str(ctx.server.lifespan_state)

    async with server.running():
        async with server.running():
            async with anyio.create_task_group() as tg:
                for _ in range(20):
                    tg.start_soon(call, server, "tools/call", {"name": "state"}, modern(), None)
            result = await call(server, "tools/call", {"name": "state"})
            assert result["content"][0]["text"] == "{'db': 'connected'}"
        assert events == ["enter"]
    assert events == ["enter", "exit"]
    async with server.running():
        pass
    assert events == ["enter", "exit", "enter", "exit"]


async def test_lifespan_shared_by_overlapping_tasks_closes_in_its_creator_after_the_last() -> None:
    """Two tasks use the server with overlapping, not nested, lifetimes (your own
    ``async with server.running()`` next to an HTTP app's lifespan): the first to enter
    leaves first, the lifespan stays up for the other and closes when it leaves too."""
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        events.append("enter")
        yield
        events.append("exit")

    server = Server("overlap", lifespan=lifespan)
    second_in, first_out, second_may_leave = anyio.Event(), anyio.Event(), anyio.Event()

    async def first() -> None:
        async with server.running():
            await second_in.wait()
        first_out.set()

    async def second() -> None:
        async with server.running():
            second_in.set()
            await second_may_leave.wait()
            assert events == ["enter"]  # still up for us
            assert server.can_spawn  # background work still possible
        events.append("second left")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await anyio.sleep(0.01)
            tg.start_soon(second)
            await second_in.wait()
            await anyio.sleep(0.05)
            assert not first_out.is_set()  # the creator waits for the other user
            assert events == ["enter"]
            second_may_leave.set()
    assert events == ["enter", "second left", "exit"] or events == ["enter", "exit", "second left"]
    assert events.count("exit") == 1
    async with server.running():  # and it can start again
        pass
    assert events.count("enter") == 2 and events.count("exit") == 2


async def test_a_lifespan_that_fails_to_start_leaves_nothing_open_and_can_be_retried() -> None:
    attempts: list[int] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("database down")
        yield

    server = Server("flaky-start", lifespan=lifespan)
    with pytest.raises(ConnectionError):
        async with server.running():
            pass
    assert not server.can_spawn and server._lifespan_users == 0
    async with server.running():
        assert server.can_spawn
    assert len(attempts) == 2
