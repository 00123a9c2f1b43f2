"""Client logic without processes: era probe decisions, the MRTR loop's rules, callbacks and
capabilities, the TTL cache, error unwrapping, x-mcp-header dropping, CLI argument parsing.

A scripted in-memory transport stands in for the server so each rule is checked exactly.
"""

from __future__ import annotations

import re
from typing import Any, cast

import pytest
from clientkit import (
    DISCOVERED,
    INITIALIZED,
    client_for,
    legacy_server,
)

from mcpkit.cli.exits import UsageError
from mcpkit.cli.pairs import parse_pairs
from mcpkit.client import (
    ClientError,
    ConnectError,
    HttpStatusError,
    InputRequestError,
    InvalidResultError,
    RequestTimeoutError,
    ResultCache,
    Root,
    ServerError,
    TooManyInputRounds,
    VersionNegotiationError,
)
from mcpkit.client.callbacks import Callbacks
from mcpkit.client.errors import unwrap
from mcpkit.client.mrtr import continue_with_input

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- era probe


@pytest.mark.parametrize(
    "failure",
    [
        ServerError(-32601, "Method not found"),
        ServerError(-32602, "Invalid request parameters"),
        ServerError(-32600, "Bad Request: session not initialized"),
        ServerError(-32000, "Bad Request: No valid session ID provided", http_status=400),
        HttpStatusError("HTTP 405", 405),
        RequestTimeoutError("server/discover", 5),
    ],
    ids=["-32601", "-32602", "-32600", "-32000", "http-405", "timeout"],
)
async def test_anything_but_a_modern_answer_falls_back(failure: BaseException) -> None:
    client = client_for(legacy_server(failure))
    async with client:
        assert client.era == "legacy" and client.protocol_version == "2025-11-25"
    sent = [method for method, _ in client.transport.sent]  # type: ignore[attr-defined]
    assert sent[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert client.transport.legacy_version == "2025-11-25"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "failure",
    [
        ServerError(-32020, "Header mismatch"),
        ServerError(-32021, "Missing required client capability"),
        ConnectError("connection refused"),
    ],
)
async def test_modern_errors_and_connection_failures_are_raised(failure: BaseException) -> None:
    with pytest.raises(type(failure)):
        async with client_for(legacy_server(failure)):
            pass


async def test_unsupported_version_is_retried_with_a_supported_one() -> None:
    calls = 0

    async def respond(method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:  # reject the first try even though the version is fine
            raise ServerError(
                -32022,
                "Unsupported protocol version",
                {"supported": ["2026-07-28"], "requested": "2026-07-28"},
            )
        return DISCOVERED

    client = client_for(respond)
    async with client:
        assert client.era == "modern"
    assert calls == 2


async def test_unsupported_version_listing_only_legacy_falls_back() -> None:
    error = ServerError(-32022, "Unsupported", {"supported": ["2025-11-25"], "requested": "x"})
    async with client_for(legacy_server(error)) as client:
        assert client.era == "legacy"


async def test_no_common_version() -> None:
    async def discover_only_future(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {**DISCOVERED, "supportedVersions": ["2099-01-01"]}

    with pytest.raises(VersionNegotiationError, match="2099-01-01"):
        async with client_for(discover_only_future):
            pass

    async def initialize_answers_unknown(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {**INITIALIZED, "protocolVersion": "1999-01-01"}

    with pytest.raises(VersionNegotiationError, match="1999-01-01"):
        async with client_for(initialize_answers_unknown, era="legacy"):
            pass


async def test_unsupported_version_on_a_later_request_switches_and_retries() -> None:
    tries: list[str] = []

    async def respond(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "server/discover":
            return DISCOVERED
        tries.append(params["_meta"]["io.modelcontextprotocol/protocolVersion"])
        if len(tries) == 1:
            raise ServerError(-32022, "Unsupported", {"supported": ["2026-07-28"]})
        return {"content": [], "resultType": "complete"}

    async with client_for(respond) as client:
        await client.call_tool("x")
    assert tries == ["2026-07-28", "2026-07-28"]


async def test_modern_meta_is_complete_and_fresh() -> None:
    async with client_for(
        legacy_server(None),
        log_level="info",
        trace_context=lambda: {"traceparent": "00-ab-cd-01", "x": "dropped"},
        elicitation=lambda p: {"action": "decline"},
    ) as client:
        await client.call_tool("x", on_progress=lambda p: None)
        method, params = client.transport.sent[-1]  # type: ignore[attr-defined]
    assert method == "tools/call" and params is not None
    meta = params["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": {"form": {}}}
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcpkit-client"
    assert meta["io.modelcontextprotocol/logLevel"] == "info"
    assert meta["traceparent"] == "00-ab-cd-01" and "x" not in meta
    assert isinstance(meta["progressToken"], str)


async def test_pagination_follows_cursors_and_stops_loops() -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {"tools": [{"name": "a"}], "nextCursor": ""},  # "" is a valid cursor
        "": {"tools": [{"name": "b"}], "nextCursor": "c2"},
        "c2": {"tools": [{"name": "c"}]},
    }

    async def respond(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "server/discover":
            return DISCOVERED
        return pages[params.get("cursor")]

    async with client_for(respond) as client:
        assert [t["name"] for t in await client.list_tools()] == ["a", "b", "c"]
        pages["c2"] = {"tools": [], "nextCursor": ""}  # a server that loops
        with pytest.raises(InvalidResultError, match="repeated cursor"):
            await client.list_tools()
        pages[None] = {"resources": []}
        with pytest.raises(InvalidResultError, match="no 'tools' list"):
            await client.list_tools()


# --------------------------------------------------------------------------- MRTR


def scripted(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Any]:
    sent: list[dict[str, Any]] = []

    async def send(params: dict[str, Any]) -> dict[str, Any]:
        sent.append(params)
        return results[len(sent) - 1]

    return sent, send


async def run_with_input(
    method: str, params: dict[str, Any], send: Any, callbacks: Callbacks, max_rounds: int
) -> dict[str, Any]:
    """What the client does: the first round, then the rest when it is not complete."""
    return await continue_with_input(
        method, params, await send(params), send, callbacks, max_rounds
    )


ELICIT = {
    "method": "elicitation/create",
    "params": {"message": "Sure?", "requestedSchema": {"type": "object"}},
}


async def test_mrtr_echoes_state_verbatim_and_answers_every_request() -> None:
    state = 'opaque "state" with ünïcode\n and {json}'
    sent, send = scripted(
        [
            {
                "resultType": "input_required",
                "inputRequests": {"a": ELICIT, "b": ELICIT},
                "requestState": state,
            },
            {"content": [], "resultType": "complete"},
        ]
    )
    callbacks = Callbacks(elicitation=lambda p: {"action": "accept", "content": {"ok": True}})
    result = await run_with_input(
        "tools/call", {"name": "t", "arguments": {"x": 1}}, send, callbacks, 5
    )
    assert result == {"content": [], "resultType": "complete"}
    assert sent[1] == {
        "name": "t",
        "arguments": {"x": 1},
        "requestState": state,
        "inputResponses": {
            "a": {"action": "accept", "content": {"ok": True}},
            "b": {"action": "accept", "content": {"ok": True}},
        },
    }


async def test_mrtr_without_state_sends_none_and_earlier_answers_are_not_resent() -> None:
    sent, send = scripted(
        [
            {"resultType": "input_required", "inputRequests": {"a": ELICIT}},
            {"resultType": "input_required", "requestState": "s2"},  # load shedding
            {"resultType": "complete"},
        ]
    )
    callbacks = Callbacks(elicitation=lambda p: {"action": "decline"})
    await run_with_input("prompts/get", {"name": "p"}, send, callbacks, 5)
    assert sent[1] == {"name": "p", "inputResponses": {"a": {"action": "decline"}}}
    assert sent[2] == {"name": "p", "requestState": "s2"}


async def test_mrtr_missing_result_type_is_complete() -> None:
    sent, send = scripted([{"content": [{"type": "text", "text": "no resultType"}]}])
    result = await run_with_input("tools/call", {"name": "t"}, send, Callbacks(), 5)
    assert len(sent) == 1 and result["content"][0]["text"] == "no resultType"


@pytest.mark.parametrize(
    "result",
    [
        {"resultType": "task", "taskId": "t1"},
        {"resultType": "input_required"},
        {"resultType": "input_required", "inputRequests": {"a": {"params": {}}}},
    ],
)
async def test_mrtr_invalid_results(result: dict[str, Any]) -> None:
    _, send = scripted([result])
    with pytest.raises(InvalidResultError):
        await run_with_input("tools/call", {"name": "t"}, send, Callbacks(), 5)


async def test_mrtr_round_bound() -> None:
    _, send = scripted([{"resultType": "input_required", "requestState": "again"}] * 10)
    with pytest.raises(TooManyInputRounds, match="after 3 rounds"):
        await run_with_input("tools/call", {"name": "t"}, send, Callbacks(), 3)


async def test_mrtr_without_a_callback_says_which() -> None:
    _, send = scripted(
        [
            {
                "resultType": "input_required",
                "inputRequests": {
                    "s": {
                        "method": "sampling/createMessage",
                        "params": {"messages": [], "maxTokens": 5},
                    }
                },
            }
        ]
    )
    with pytest.raises(InputRequestError, match="no sampling callback") as info:
        await run_with_input("tools/call", {"name": "t"}, send, Callbacks(), 3)
    assert info.value.missing


# --------------------------------------------------------------------------- callbacks


def test_capabilities_follow_callbacks() -> None:
    def handler(p: Any) -> Any:
        return p

    assert Callbacks().capabilities(roots_list_changed=False) == {}
    assert Callbacks(elicitation=handler).capabilities(roots_list_changed=False) == {
        "elicitation": {"form": {}}
    }
    assert Callbacks(url_elicitation=handler).capabilities(roots_list_changed=False) == {
        "elicitation": {"url": {}}
    }
    both = Callbacks(
        elicitation=handler,
        url_elicitation=handler,
        sampling=handler,
        sampling_tools=True,
        roots=[],
    )
    assert both.capabilities(roots_list_changed=False) == {
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}},
        "roots": {},
    }
    assert both.capabilities(roots_list_changed=True)["roots"] == {"listChanged": True}


async def test_callback_answers_are_checked() -> None:
    wrong: Any = [{"name": "no uri"}]  # ill-typed on purpose: the runtime check is under test
    bad = Callbacks(
        elicitation=lambda p: cast(Any, {"action": "yes"}),
        sampling=lambda p: cast(Any, {"text": "x"}),
        roots=wrong,
    )
    with pytest.raises(InputRequestError, match="action"):
        await bad.answer("elicitation/create", {"message": "m"})
    with pytest.raises(InputRequestError, match="CreateMessageResult"):
        await bad.answer("sampling/createMessage", {})
    with pytest.raises(InputRequestError, match="invalid root"):
        await bad.answer("roots/list", {})
    with pytest.raises(InputRequestError, match="url-mode"):
        await bad.answer("elicitation/create", {"mode": "url", "url": "https://x"})

    async def roots() -> list[Root]:
        return [{"uri": "file:///a"}]

    good = Callbacks(
        elicitation=lambda p: {"action": "decline", "content": {"ignored": 1}}, roots=roots
    )
    assert await good.answer("elicitation/create", {}) == {"action": "decline"}
    assert await good.answer("roots/list", {}) == {"roots": [{"uri": "file:///a"}]}
    assert await good.answer("ping", {}) == {}


# --------------------------------------------------------------------------- cache


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_cache_ttl_scope_and_invalidation() -> None:
    clock = Clock()
    cache = ResultCache(max_entries=3, clock=clock)
    alice, bob = object(), object()
    private = {"tools": [1], "ttlMs": 1000, "cacheScope": "private"}
    public = {"contents": [], "ttlMs": 5000, "cacheScope": "public"}
    cache.store("srv", alice, "tools/list", "", private)
    cache.store("srv", alice, "resources/read", "r://1", public)
    assert cache.lookup("srv", alice, "tools/list", "") is private
    assert cache.lookup("srv", bob, "tools/list", "") is None  # private: not shared
    assert cache.lookup("srv", bob, "resources/read", "r://1") is public  # public: shared
    assert cache.lookup("other", bob, "resources/read", "r://1") is None
    clock.now += 1.5
    assert cache.lookup("srv", alice, "tools/list", "") is None  # expired
    cache.on_notification("srv", "notifications/resources/updated", {"uri": "r://1"})
    assert cache.lookup("srv", bob, "resources/read", "r://1") is None
    for ttl in (0, -5, None, "10", True):
        cache.store("srv", alice, "prompts/list", str(ttl), {"prompts": [], "ttlMs": ttl})
    assert len(cache) == 0  # absent, zero, negative or non-numeric ttl: not cached
    cache.store("srv", alice, "tools/list", "a", private)
    cache.store("srv", alice, "tools/list", "b", private)
    cache.store("srv", alice, "resources/list", "", private)
    cache.on_notification("srv", "notifications/tools/list_changed", {})
    assert len(cache) == 1
    for key in "wxyz":
        cache.store("srv", alice, "prompts/list", key, private)
    assert len(cache) == 3  # bounded
    cache.store("srv", alice, "tools/call", "k", {"resultType": "input_required", "ttlMs": 9})
    assert cache.lookup("srv", alice, "tools/call", "k") is None


# --------------------------------------------------------------------------- errors, headers


def test_unwrap_prefers_the_client_error() -> None:
    inner = ServerError(-32602, "bad", method="tools/call")
    group = BaseExceptionGroup("outer", [ValueError("x"), ExceptionGroup("inner", [inner])])
    assert unwrap(group) is inner
    assert isinstance(unwrap(ExceptionGroup("g", [KeyError("k")])), KeyError)
    plain = RuntimeError("plain")
    assert unwrap(plain) is plain
    assert str(inner) == "tools/call failed: bad (code -32602)"
    assert isinstance(inner, ClientError)


TOOLS = [
    {
        "name": "ok",
        "inputSchema": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        },
    },
    {
        "name": "bad",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
        },
    },
    {"inputSchema": {}},  # no name: ignored
]


@pytest.mark.parametrize("kind", ["http", "stdio"])
async def test_invalid_header_annotations_drop_tools_on_http_only(kind: str) -> None:
    async def respond(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "server/discover":
            return DISCOVERED
        if method == "tools/list":
            return {"tools": TOOLS, "resultType": "complete", "ttlMs": 0}
        return {"content": [], "resultType": "complete"}

    async with client_for(respond, kind=kind) as client:
        names = [tool["name"] for tool in await client.list_tools()]
        if kind == "http":
            assert names == ["ok"] and "string, integer or boolean" in client.dropped_tools["bad"]
            with pytest.raises(ClientError, match="dropped"):
                await client.call_tool("bad", {"n": 1})
        else:
            assert names == ["ok", "bad"] and not client.dropped_tools


# --------------------------------------------------------------------------- CLI


def test_cli_pairs_follow_the_schema() -> None:
    schema = {
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "f": {"type": "number"},
            "b": {"type": "boolean"},
            "a": {"type": "array"},
        }
    }
    assert parse_pairs(
        ["s=42", "i=7", "f=2.5", "b=yes", "a=[1,2]", "u:=3", 'j:={"k": [true]}'], schema
    ) == {"s": "42", "i": 7, "f": 2.5, "b": True, "a": [1, 2], "u": 3, "j": {"k": [True]}}
    # no schema (or one that admits more): undeclared words pass, typed by their look
    assert parse_pairs(["u=3", "w=word", "e="], {}) == {"u": 3, "w": "word", "e": ""}
    for bad, says in (
        (["i=seven"], "i: expected an integer, got 'seven'"),
        (["b=maybe"], "b: expected a boolean"),
        (["novalue"], "key=value"),
        (["a=[1"], "a: expected JSON for an array"),
        (["typo=1"], "no argument 'typo'; it takes: s, i, f, b, a"),
    ):
        with pytest.raises(UsageError, match=re.escape(says)):
            parse_pairs(bad, schema)
