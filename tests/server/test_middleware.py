"""Middleware in-process, on both eras: onion order, changing params and results,
short-circuits, list filtering, and the built-ins (error masking, per-tool timeout,
response size limit, rate limit, timing).  Every result is schema-checked by the helpers."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import pytest

from mcpkit import McpError, Server
from mcpkit.protocol.negotiation import RequestMeta
from mcpkit.server import CallNext, Context, Middleware
from mcpkit.server.middleware.ratelimit import RATE_LIMITED, RateLimit, RateRule
from mcpkit.server.middleware.size import ResponseSizeLimit
from mcpkit.server.middleware.timeout import ToolTimeout
from mcpkit.server.middleware.timing import Timing
from support.inproc import CollectingExchange, call, call_error, legacy, modern, text_of

pytestmark = pytest.mark.anyio

ERAS = [pytest.param(modern, id="modern"), pytest.param(legacy, id="legacy")]


class Tracer(Middleware):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.log.append(f"{self.name}.request>")
        result = await call_next(ctx)
        self.log.append(f"{self.name}.request<")
        return result

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.log.append(f"{self.name}.call_tool>")
        result = await call_next(ctx)
        self.log.append(f"{self.name}.call_tool<")
        return result


def make_server(**options: Any) -> Server:
    server = Server("mw", "1.0", **options)

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def secret() -> str:
        return "classified"

    @server.tool
    def boom() -> str:
        raise RuntimeError("db password is hunter2")

    @server.resource("test://doc")
    def doc() -> str:
        return "the doc"

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_onion_order_is_list_order(era: Any) -> None:
    log: list[str] = []
    server = make_server(middleware=[Tracer("a", log)])
    server.add_middleware(Tracer("b", log))
    result = await call(server, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, era())
    assert text_of(result) == "x"
    assert log == [
        "a.request>",
        "a.call_tool>",
        "b.request>",
        "b.call_tool>",
        "b.call_tool<",
        "b.request<",
        "a.call_tool<",
        "a.request<",
    ]
    log.clear()
    await call(server, "resources/read", {"uri": "test://doc"}, era())
    assert log == ["a.request>", "b.request>", "b.request<", "a.request<"]


@pytest.mark.parametrize("era", ERAS)
async def test_change_params_and_result(era: Any) -> None:
    class Shout(Middleware):
        async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            ctx.params = {**ctx.params, "arguments": {"text": ctx.params["arguments"]["text"] * 2}}
            result = await call_next(ctx)
            result["content"][0]["text"] = result["content"][0]["text"].upper()
            return result

    server = make_server(middleware=[Shout()])
    result = await call(server, "tools/call", {"name": "echo", "arguments": {"text": "ab"}}, era())
    assert text_of(result) == "ABAB"


@pytest.mark.parametrize("era", ERAS)
async def test_short_circuit_with_result_and_error(era: Any) -> None:
    called: list[str] = []

    class Gate(Middleware):
        async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            if ctx.params["name"] == "secret":
                raise McpError(-32001, "Forbidden")
            if ctx.params["name"] == "echo":
                return {"content": [{"type": "text", "text": "from cache"}]}
            return await call_next(ctx)

    server = make_server(middleware=[Gate()])

    @server.tool
    def tracked() -> str:
        called.append("tracked")
        return "ran"

    result = await call(server, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, era())
    assert text_of(result) == "from cache"
    error = await call_error(server, "tools/call", {"name": "secret"}, era(), code=-32001)
    assert error.message == "Forbidden"
    result = await call(server, "tools/call", {"name": "tracked"}, era())
    assert text_of(result) == "ran" and called == ["tracked"]


@pytest.mark.parametrize("era", ERAS)
async def test_list_middleware_filters_without_touching_the_cache(era: Any) -> None:
    class Hide(Middleware):
        async def on_list_tools(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            result = await call_next(ctx)
            return {**result, "tools": [t for t in result["tools"] if t["name"] != "secret"]}

    server = make_server(middleware=[Hide()])
    names = [t["name"] for t in (await call(server, "tools/list", {}, era()))["tools"]]
    assert "secret" not in names and "echo" in names
    assert "secret" in [t.wire["name"] for t in server.tools.values()]
    names = [t["name"] for t in (await call(server, "tools/list", {}, era()))["tools"]]
    assert "secret" not in names


async def test_a_middleware_that_overrides_nothing_adds_no_layer() -> None:
    server = make_server()
    server.add_middleware(Middleware())
    assert server._chains["tools/call"] is server._handlers["tools/call"]
    server.add_middleware(Timing())
    assert server._chains["tools/call"] is not server._handlers["tools/call"]


async def test_add_middleware_refuses_other_objects() -> None:
    with pytest.raises(TypeError):
        make_server().add_middleware(object())  # type: ignore[arg-type]


# --------------------------------------------------------------------------- built-ins


@pytest.mark.parametrize("era", ERAS)
async def test_mask_errors_hides_the_text_and_logs_it_with_the_id(
    era: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = make_server(mask_errors=True)
    with caplog.at_level(logging.ERROR, logger="mcpkit.server.errors"):
        result = await call(server, "tools/call", {"name": "boom"}, era())
    assert result["isError"] is True
    text = text_of(result)
    assert "hunter2" not in text and "RuntimeError" not in text
    cid = result["_meta"]["io.mcpkit/correlationId"]
    assert cid in text
    record = next(r for r in caplog.records if cid in r.getMessage())
    assert record.exc_info is not None and "hunter2" in str(record.exc_info[1])
    # Unmasked, the model sees the exception text (unchanged default behaviour).
    plain = await call(make_server(), "tools/call", {"name": "boom"}, era())
    assert "hunter2" in text_of(plain)


@pytest.mark.parametrize("era", ERAS)
async def test_mask_errors_on_an_unexpected_handler_exception(era: Any) -> None:
    class Broken(Middleware):
        async def on_read_resource(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            raise KeyError("internal table users_v2")

    server = make_server(mask_errors=True, middleware=[Broken()])
    error = await call_error(server, "resources/read", {"uri": "test://doc"}, era(), code=-32603)
    assert "users_v2" not in error.message and "KeyError" not in error.message
    assert error.data["correlationId"] in error.message


@pytest.mark.parametrize("era", ERAS)
async def test_tool_timeout_cancels_and_answers_is_error(era: Any) -> None:
    server = make_server()
    finished: list[str] = []

    @server.tool(timeout=0.2)
    async def slow() -> str:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            finished.append("cancelled")
            raise
        return "done"

    assert any(isinstance(m, ToolTimeout) for m in server.middleware)
    result = await call(server, "tools/call", {"name": "slow"}, era())
    assert result["isError"] is True
    assert "timed out after 0.2 s" in text_of(result)
    assert finished == ["cancelled"]
    # Other tools are untouched by the timeout middleware.
    result = await call(server, "tools/call", {"name": "echo", "arguments": {"text": "ok"}}, era())
    assert text_of(result) == "ok"


async def test_tool_timeout_on_a_plain_def_runs_it_in_a_thread() -> None:
    server = make_server()

    @server.tool(timeout=0.2)
    def blocking() -> str:
        time.sleep(1.0)
        return "late"

    assert server.tools["blocking"].threaded
    result = await call(server, "tools/call", {"name": "blocking"}, modern())
    assert result["isError"] is True and "timed out" in text_of(result)
    with pytest.raises(ValueError):
        server.tool(timeout=0)(lambda: None)


@pytest.mark.parametrize("era", ERAS)
async def test_response_size_limit(era: Any) -> None:
    server = make_server(middleware=[ResponseSizeLimit(max_bytes=200)])
    small = await call(server, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, era())
    assert text_of(small) == "x"
    big = await call(
        server, "tools/call", {"name": "echo", "arguments": {"text": "y" * 500}}, era()
    )
    assert big["isError"] is True and "Response too large" in text_of(big)

    @server.resource("test://big")
    def big_doc() -> str:
        return "z" * 500

    error = await call_error(server, "resources/read", {"uri": "test://big"}, era(), code=-32603)
    assert error.data["limit"] == 200


@pytest.mark.parametrize("era", ERAS)
async def test_rate_limit_per_tool_and_principal(era: Any) -> None:
    limiter = RateLimit(RateRule("2/minute", methods=("tools/call",), names=("echo",)))
    server = make_server(middleware=[limiter])
    args = {"name": "echo", "arguments": {"text": "x"}}
    for _ in range(2):
        assert text_of(await call(server, "tools/call", args, era())) == "x"
    error = await call_error(server, "tools/call", args, era(), code=RATE_LIMITED)
    assert error.data["retryAfter"] >= 1
    assert error.http_status == 429
    # Another tool and another method are not counted under the rule.
    assert text_of(await call(server, "tools/call", {"name": "secret"}, era())) == "classified"
    await call(server, "tools/list", {}, era())


async def test_rate_limit_budgets_are_per_principal() -> None:
    server = make_server(middleware=[RateLimit("1/minute")])
    from mcpkit.types import jsonrpc

    async def as_user(who: str) -> dict[str, Any]:
        message = jsonrpc.request(1, "tools/list", {})
        meta = RequestMeta(era="modern", protocol_version="2026-07-28")
        return await server.dispatch(message, meta, CollectingExchange(), principal=who)

    await as_user("alice")
    await as_user("bob")
    with pytest.raises(McpError) as refused:
        await as_user("alice")
    assert refused.value.code == RATE_LIMITED


async def test_rate_limit_on_redis_is_shared_and_asyncio_counts_without_a_thread(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two limiters (two replicas) on one real Redis share a budget.  On asyncio the
    counting uses limits' async Redis client, so no check waits on a worker thread; under
    trio the synchronous client runs on one."""
    from support.servers import redis_server

    hops: list[str] = []
    real = anyio.to_thread.run_sync

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append("thread")
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    with redis_server() as port:
        url = f"redis://127.0.0.1:{port}"
        rule = RateRule("3/minute", methods=("tools/call",))
        one, two = (RateLimit(rule, storage_url=url, key_prefix="t") for _ in range(2))
        assert (await one.check("alice", "tools/call", "echo")).allowed
        assert (await two.check("alice", "tools/call", "echo")).allowed
        assert (await one.check("alice", "tools/call", "echo")).allowed
        refused = await two.check("alice", "tools/call", "echo")
        assert not refused.allowed and refused.retry_after_s >= 1
        assert (await two.check("bob", "tools/call", "echo")).allowed  # per principal
    if anyio_backend == "asyncio":
        assert hops == []
    else:
        assert hops


@pytest.mark.parametrize("era", ERAS)
async def test_timing_logs_one_structured_line_per_request(
    era: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = make_server(middleware=[Timing()])
    with caplog.at_level(logging.INFO, logger="mcpkit.server.requests"):
        await call(server, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, era())
        await call_error(server, "tools/call", {"name": "nope"}, era(), code=-32602)
    first, second = (r for r in caplog.records if r.name == "mcpkit.server.requests")
    assert first.mcp_method == "tools/call" and first.mcp_name == "echo"  # type: ignore[attr-defined]
    assert first.mcp_outcome == "ok" and first.mcp_era == era().era  # type: ignore[attr-defined]
    assert first.mcp_duration_ms >= 0  # type: ignore[attr-defined]
    assert second.mcp_outcome == "error -32602"  # type: ignore[attr-defined]


async def test_legacy_session_methods_pass_through_the_chain() -> None:
    """initialize, ping and logging/setLevel are answered by the legacy session, inside the
    same dispatch and middleware as every other request."""
    from mcpkit.runtime.legacy_session import LegacySession
    from mcpkit.types import jsonrpc

    seen: list[str] = []

    class Seen(Middleware):
        async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            seen.append(ctx.method)
            if ctx.method == "logging/setLevel" and ctx.params.get("level") == "emergency":
                raise McpError(-32001, "not allowed here")
            return await call_next(ctx)

    server = make_server(middleware=[Seen()])
    session = LegacySession()
    exchange = CollectingExchange()
    init = jsonrpc.request(
        1,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT},
    )
    result = await session.handle_request(server, init, exchange)
    assert result["protocolVersion"] == "2025-11-25" and session.initialized
    session.on_notification({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert await session.handle_request(server, jsonrpc.request(2, "ping", {}), exchange) == {}
    level = jsonrpc.request(3, "logging/setLevel", {"level": "info"})
    assert await session.handle_request(server, level, exchange) == {}
    assert session.log_level == "info"
    refused = jsonrpc.request(4, "logging/setLevel", {"level": "emergency"})
    with pytest.raises(McpError):
        await session.handle_request(server, refused, exchange)
    assert session.log_level == "info"
    assert seen == ["initialize", "ping", "logging/setLevel", "logging/setLevel"]


CLIENT = {"name": "t", "version": "1"}


@pytest.mark.parametrize("era", ERAS)
async def test_response_cache_for_read_only_tools_and_resources(era: Any) -> None:
    from mcpkit.server.middleware.cache import ResponseCache
    from mcpkit.types import jsonrpc

    server = Server("cached", middleware=[ResponseCache(ttl_s=60)])
    calls: list[str] = []

    @server.tool(annotations={"readOnlyHint": True})
    def lookup(q: str) -> str:
        calls.append(q)
        return f"answer {q} #{len(calls)}"

    @server.tool
    def write(q: str) -> str:
        calls.append("write")
        return f"wrote #{len(calls)}"

    @server.tool(annotations={"readOnlyHint": True})
    def flaky(q: str) -> str:
        calls.append("flaky")
        raise RuntimeError("try again")

    @server.resource("test://clock")
    def clock() -> str:
        calls.append("clock")
        return f"tick #{len(calls)}"

    async def as_user(who: str | None, name: str, q: str) -> str:
        message = jsonrpc.request(1, "tools/call", {"name": name, "arguments": {"q": q}})
        result = await server.dispatch(message, era(), CollectingExchange(), principal=who)
        return text_of(result)

    first = await as_user(None, "lookup", "a")
    assert await as_user(None, "lookup", "a") == first  # served from the cache
    assert calls == ["a"]
    assert await as_user(None, "lookup", "b") != first  # other arguments
    assert await as_user("alice", "lookup", "a") != first  # another principal
    assert calls == ["a", "b", "a"]
    assert await as_user(None, "write", "a") != await as_user(None, "write", "a")
    await as_user(None, "flaky", "a")
    await as_user(None, "flaky", "a")  # errors are not cached
    assert calls.count("flaky") == 2
    read1 = await call(server, "resources/read", {"uri": "test://clock"}, era())
    read2 = await call(server, "resources/read", {"uri": "test://clock"}, era())
    assert read1["contents"] == read2["contents"] and calls.count("clock") == 1
