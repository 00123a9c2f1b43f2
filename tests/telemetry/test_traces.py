"""One trace across client -> gateway -> upstream, with the OTel SDK's in-memory exporter.

Everything is real except the exporter: the upstream and the gateway are served over
Streamable HTTP on 127.0.0.1 sockets (uvicorn, in this event loop, so their spans reach
this process's exporter), the gateway forwards with its ordinary upstream client, and the
test's client talks HTTP to the gateway.  Run on both eras (front and upstream alike).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from mcpkit import Server
from mcpkit.client import Client, ElicitResult, EraCache
from mcpkit.gateway.config import parse_config
from mcpkit.gateway.server import GatewayServer
from mcpkit.server import Context
from mcpkit.server.middleware.telemetry import Telemetry
from mcpkit.testing import serve_http
from mcpkit.types.versions import EraChoice

pytestmark = pytest.mark.anyio
VERSION = {"modern": "2026-07-28", "legacy": "2025-11-25"}


def make_upstream() -> Server:
    server = Server("upstream", "1.0.0", middleware=[Telemetry()])

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("no")

    @server.tool
    async def confirm(ctx: Context) -> str:
        """Ask the user (an MRTR round on 2026-07-28)."""
        answer = await ctx.elicit(
            "Go?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        return "yes" if answer.get("action") == "accept" else "no"

    @server.tool(task="optional")
    async def slow(text: str) -> str:
        """A task-backed call when the client asks for one."""
        await anyio.sleep(0)
        return text.upper()

    return server


@contextlib.asynccontextmanager
async def stack(era: str) -> AsyncIterator[str]:
    """Upstream and gateway on 127.0.0.1; yields the gateway's URL."""
    async with serve_http(make_upstream()) as up_url:
        config = parse_config(
            {"upstreams": [{"name": "up", "url": up_url, "era": era, "health_interval": 0}]}
        )
        gateway = GatewayServer(config)
        gateway.add_middleware(Telemetry())
        async with gateway.serving(), serve_http(gateway) as gw_url:
            yield gw_url


def by_trace(spans: list[ReadableSpan], root: ReadableSpan) -> list[ReadableSpan]:
    assert root.context is not None
    return [
        s for s in spans if s.context is not None and s.context.trace_id == root.context.trace_id
    ]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def only(spans: list[ReadableSpan], name: str, kind: SpanKind) -> ReadableSpan:
    found = [s for s in spans if s.name == name and s.kind == kind]
    assert len(found) == 1, [(s.name, s.kind) for s in spans]
    return found[0]


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_tools_call_is_one_trace_through_the_gateway(spans: Any, era: EraChoice) -> None:
    async with stack(era) as url, Client(url, era=era, era_cache=EraCache()) as client:
        spans.clear()  # connecting (discover / initialize) has spans of its own
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["content"][0]["text"] == "5"
    finished = list(spans.get_finished_spans())
    # the test's client span starts the trace
    top = only([s for s in finished if s.parent is None], "tools/call add", SpanKind.CLIENT)
    trace = by_trace(finished, top)
    tool_spans = [s for s in trace if s.name == "tools/call add"]
    assert sorted(s.kind.name for s in tool_spans) == ["CLIENT", "CLIENT", "SERVER", "SERVER"]
    gw_server = only(
        [s for s in trace if parent_of(s) == top.context.span_id], "tools/call add", SpanKind.SERVER
    )
    gw_client = only(
        [s for s in trace if parent_of(s) == gw_server.context.span_id],
        "tools/call add",
        SpanKind.CLIENT,
    )
    up_server = only(
        [s for s in trace if parent_of(s) == gw_client.context.span_id],
        "tools/call add",
        SpanKind.SERVER,
    )
    assert gw_server.parent is not None and up_server.parent is not None
    assert gw_server.parent.is_remote and up_server.parent.is_remote  # via params._meta
    for span in (top, gw_server, gw_client, up_server):
        attrs = dict(span.attributes or {})
        assert attrs["mcp.method.name"] == "tools/call"
        assert attrs["gen_ai.tool.name"] == "add"
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["mcp.protocol.version"] == VERSION[era]
        assert attrs["network.transport"] == "tcp"
        assert attrs["server.address"] == "127.0.0.1"
        assert isinstance(attrs["server.port"], int)
        assert "error.type" not in attrs
        assert span.status.status_code != StatusCode.ERROR
        if era == "legacy":
            assert attrs["mcp.session.id"]
        else:
            assert "mcp.session.id" not in attrs
    # each hop's id is the one on its wire: the client's and the server's span agree
    ids = [
        dict(s.attributes or {})["jsonrpc.request.id"]
        for s in (top, gw_server, gw_client, up_server)
    ]
    assert all(isinstance(i, str) and i for i in ids)
    assert ids[0] == ids[1] and ids[2] == ids[3]
    # the legacy session ids name each hop's own session (front, upstream)
    if era == "legacy":
        sessions = [
            dict(s.attributes or {})["mcp.session.id"]
            for s in (top, gw_server, gw_client, up_server)
        ]
        assert sessions[0] == sessions[1] and sessions[2] == sessions[3]
        assert sessions[0] != sessions[2]


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_failing_tool_marks_every_span(spans: Any, era: EraChoice) -> None:
    async with stack(era) as url, Client(url, era=era, era_cache=EraCache()) as client:
        spans.clear()
        result = await client.call_tool("broken")
        assert result.is_error
    trace = [s for s in spans.get_finished_spans() if s.name == "tools/call broken"]
    assert len(trace) == 4
    for span in trace:
        assert span.attributes["error.type"] == "tool_error"
        assert span.status.status_code == StatusCode.ERROR


async def test_jsonrpc_error_sets_error_type_and_status(spans: Any) -> None:
    async with stack("modern") as url, Client(url, era_cache=EraCache()) as client:
        spans.clear()
        with pytest.raises(Exception, match="nope"):
            await client.request("tools/call", {"name": "nope", "arguments": {}})
    finished = [s for s in spans.get_finished_spans() if s.name == "tools/call nope"]
    assert {s.kind for s in finished} == {SpanKind.CLIENT, SpanKind.SERVER}
    for span in finished:
        assert span.attributes["error.type"] == "-32602"
        assert span.attributes["rpc.response.status_code"] == "-32602"
        assert span.status.status_code == StatusCode.ERROR
        assert "nope" in (span.status.description or "")


async def accept(params: dict[str, Any]) -> ElicitResult:
    return {"action": "accept", "content": {"ok": True}}


def rounds_of(finished: list[ReadableSpan], kind: SpanKind) -> list[ReadableSpan]:
    return sorted(
        (s for s in finished if s.name == "tools/call confirm" and s.kind == kind),
        key=lambda s: s.start_time or 0,
    )


def assert_linked(first: ReadableSpan, second: ReadableSpan) -> None:
    """``second`` (the retry) links to ``first`` as its previous round, and only to it."""
    assert not first.links
    assert [(link.context.span_id, dict(link.attributes or {})) for link in second.links] == [
        (first.context.span_id, {"mcpkit.link": "previous_round"})
    ]


async def test_mrtr_rounds_are_linked(spans: Any) -> None:
    server = make_upstream()
    async with (
        serve_http(server) as url,
        Client(url, era_cache=EraCache(), elicitation=accept) as client,
    ):
        spans.clear()
        result = await client.call_tool("confirm")
        assert result["content"][0]["text"] == "yes"
    finished = list(spans.get_finished_spans())
    rounds = rounds_of(finished, SpanKind.CLIENT)
    assert len(rounds) == 2
    assert_linked(*rounds)
    servers = rounds_of(finished, SpanKind.SERVER)
    # each round's server span under its client span
    assert [parent_of(s) for s in servers] == [r.context.span_id for r in rounds]
    # the retry's server span links to round 1's, through the sealed requestState
    assert_linked(*servers)
    assert dict(servers[0].attributes or {})["mcp.method.name"] == "tools/call"


@pytest.mark.parametrize("upstream_era", ["modern", "legacy"])
async def test_mrtr_rounds_are_linked_through_the_gateway(spans: Any, upstream_era: str) -> None:
    """A modern front client: a modern upstream runs MRTR itself (the gateway passes its
    requestState through); a legacy upstream elicits over its session and the gateway
    runs the rounds with the front client (its own sealed state)."""
    async with (
        stack(upstream_era) as url,
        Client(url, era="modern", era_cache=EraCache(), elicitation=accept) as client,
    ):
        spans.clear()
        result = await client.call_tool("confirm")
        assert result["content"][0]["text"] == "yes"
    finished = list(spans.get_finished_spans())
    top = [c for c in rounds_of(finished, SpanKind.CLIENT) if parent_of(c) is None]
    assert len(top) == 2
    assert_linked(*top)
    gw_servers = [
        s
        for s in rounds_of(finished, SpanKind.SERVER)
        if parent_of(s) in {t.context.span_id for t in top}
    ]
    assert len(gw_servers) == 2
    if upstream_era == "modern":
        ups = [s for s in rounds_of(finished, SpanKind.SERVER) if s not in gw_servers]
        assert len(ups) == 2  # the upstream's own rounds, linked by its own state
        assert_linked(*ups)
        assert {t.context.trace_id for t in ups} == {t.context.trace_id for t in top}
    else:
        assert_linked(*gw_servers)  # the gateway's sealed state carries the link


def finished_tasks(reader: Any) -> dict[str, float]:
    data = reader.get_metrics_data()
    out: dict[str, float] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "mcpkit.server.tasks.finished":
                    for point in metric.data.data_points:
                        status = point.attributes["mcpkit.task.status"]
                        out[status] = out.get(status, 0) + point.value
    return out


async def test_task_background_work_is_linked_to_the_call(spans: Any, metric_reader: Any) -> None:
    before = finished_tasks(metric_reader).get("completed", 0)
    server = make_upstream()
    async with serve_http(server) as url, Client(url, era_cache=EraCache(), tasks=True) as client:
        spans.clear()
        task = await client.start_tool_task("slow", {"text": "hi"})
        result = await task  # type: ignore[misc]
        assert result["content"][0]["text"] == "HI"
    finished = list(spans.get_finished_spans())
    created = [s for s in finished if s.name == "tools/call slow" and s.kind == SpanKind.CLIENT]
    assert len(created) == 1
    work = only(finished, "tools/call slow task", SpanKind.INTERNAL)
    assert work.parent is None  # its own trace: it outlives the call
    assert [link.context.span_id for link in work.links] == [created[0].context.span_id]
    assert work.attributes is not None
    task_id = work.attributes["mcpkit.task.id"]
    assert isinstance(task_id, str) and task_id.startswith("task_")
    assert finished_tasks(metric_reader).get("completed", 0) == before + 1


@pytest.mark.parametrize(
    ("era", "method"), [("modern", "server/discover"), ("legacy", "initialize")]
)
async def test_the_handshake_has_its_client_and_server_span(
    spans: Any, era: EraChoice, method: str
) -> None:
    async with serve_http(make_upstream()) as url:
        spans.clear()
        async with Client(url, era=era, era_cache=EraCache()):
            pass
    finished = list(spans.get_finished_spans())
    client = only(finished, method, SpanKind.CLIENT)
    server = only(finished, method, SpanKind.SERVER)
    assert parent_of(server) == client.context.span_id
    assert server.attributes is not None and server.attributes["mcp.method.name"] == method


async def test_task_through_the_gateway_links_to_the_calls_trace(spans: Any) -> None:
    """A task-backed call through the gateway (modern both sides): the upstream's
    background span links to the gateway's CLIENT span, which is in the caller's trace."""
    async with (
        stack("modern") as url,
        Client(url, era="modern", era_cache=EraCache(), tasks=True) as client,
    ):
        spans.clear()
        task = await client.start_tool_task("slow", {"text": "hi"})
        result = await task  # type: ignore[misc]
        assert result["content"][0]["text"] == "HI"
    finished = list(spans.get_finished_spans())
    top = only(
        [s for s in finished if s.parent is None and s.kind == SpanKind.CLIENT],
        "tools/call slow",
        SpanKind.CLIENT,
    )
    trace = by_trace(finished, top)
    gw_server = only(
        [s for s in trace if parent_of(s) == top.context.span_id],
        "tools/call slow",
        SpanKind.SERVER,
    )
    gw_client = only(
        [s for s in trace if parent_of(s) == gw_server.context.span_id],
        "tools/call slow",
        SpanKind.CLIENT,
    )
    work = only(finished, "tools/call slow task", SpanKind.INTERNAL)
    assert work.parent is None and work.context.trace_id != top.context.trace_id
    assert [link.context.span_id for link in work.links] == [gw_client.context.span_id]
    assert [link.context.trace_id for link in work.links] == [top.context.trace_id]
