"""The OTel meters: duration histograms on both sides, and the open-listeners gauge read at
collection time (an open ``subscriptions/listen`` stream over real HTTP counts)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client, EraCache
from mcpkit.server.middleware.telemetry import Telemetry
from mcpkit.testing import serve_http

pytestmark = pytest.mark.anyio

#: ``mcp.{server,client}.operation.duration`` boundaries per the OTel MCP conventions,
#: written out here rather than imported from mcpkit.
SEMCONV_BOUNDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


def points(reader: Any, name: str) -> list[Any]:
    data = reader.get_metrics_data()
    return [
        p
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == name
        for p in m.data.data_points
    ]


async def test_durations_and_listeners(spans: Any, metric_reader: Any) -> None:
    server = Server("metered", middleware=[Telemetry()])

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    def listeners() -> float:
        found = [
            p.value
            for p in points(metric_reader, "mcpkit.server.listeners.active")
            if p.attributes.get("mcpkit.server.name") == "metered"
        ]
        return found[-1] if found else -1

    async with serve_http(server) as url, Client(url, era_cache=EraCache()) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        async with client.listen(tools=True):
            with anyio.fail_after(10):
                while listeners() != 1:
                    await anyio.sleep(0.02)
        with anyio.fail_after(10):
            while listeners() != 0:
                await anyio.sleep(0.02)

    for name in ("mcp.server.operation.duration", "mcp.client.operation.duration"):
        calls = [
            p
            for p in points(metric_reader, name)
            if p.attributes.get("gen_ai.tool.name") == "add"
            and p.attributes.get("mcp.method.name") == "tools/call"
        ]
        assert calls and sum(p.count for p in calls) >= 1, name
        assert all("error.type" not in p.attributes for p in calls)
        # The MCP semantic conventions' boundaries, in seconds: a call of a few
        # milliseconds lands in a low bucket, not in the SDK's millisecond-scale ones.
        assert all(tuple(p.explicit_bounds) == SEMCONV_BOUNDS for p in calls), name


async def test_task_queue_depth(spans: Any, metric_reader: Any, redis_url: str) -> None:
    """A replica that queues task work for ``mcpkit worker`` processes reports how many
    tasks wait in the queue (no worker runs here, so every task waits)."""
    server = Server("queueing", state=redis_url, middleware=[Telemetry(queue_sample_s=0.05)])
    server.task_workers = "external"

    @server.tool(task="optional")
    async def job() -> str:
        return "done"

    def queued(state: str) -> float:
        found = [
            p.value
            for p in points(metric_reader, "mcpkit.server.tasks.queued")
            if p.attributes.get("mcpkit.server.name") == "queueing"
            and p.attributes.get("mcpkit.task.queue.state") == state
        ]
        return found[-1] if found else -1

    async with serve_http(server) as url, Client(url, era_cache=EraCache(), tasks=True) as client:
        for _ in range(3):
            await client.start_tool_task("job")
        with anyio.fail_after(10):
            while queued("waiting") != 3:
                await anyio.sleep(0.05)
        assert queued("running") == 0


async def test_legacy_sessions_gauge(spans: Any, metric_reader: Any) -> None:
    """Initialized 2025-11-25 sessions, counted at collection time: a legacy client's
    session counts while it is open and stops counting once the client ends it (DELETE);
    a modern client opens none."""
    server = Server("sessions", middleware=[Telemetry()])

    @server.tool
    def ping() -> str:
        return "pong"

    def sessions() -> float:
        found = [
            p.value
            for p in points(metric_reader, "mcpkit.server.sessions.active")
            if p.attributes.get("mcp.protocol.version") == "2025-11-25"
        ]
        return found[-1] if found else 0

    async with serve_http(server) as url:
        before = sessions()
        async with Client(url, era="modern", era_cache=EraCache()) as modern:
            await modern.call_tool("ping")
            assert sessions() == before
            async with (
                Client(url, era="legacy", era_cache=EraCache()) as a,
                Client(url, era="legacy", era_cache=EraCache()) as b,
            ):
                await a.call_tool("ping")
                await b.call_tool("ping")
                assert sessions() == before + 2
            with anyio.fail_after(10):
                while sessions() != before:
                    await anyio.sleep(0.02)
