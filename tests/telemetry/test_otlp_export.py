"""``--otel`` end to end: real ``mcpkit serve`` and ``mcpkit gateway`` processes, configured
only by the standard ``OTEL_*`` environment variables, export over OTLP/HTTP to a receiver
in this test (``receiver.py``, decoding with ``opentelemetry-proto``).  The test's own
client span (in-memory exporter) and the spans of both processes form one trace.

Also ``serve --metrics`` (Prometheus text at ``/metrics``) and ``--log-format json`` (the
tool's log line carries the trace and span id of the span it ran in).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.trace import SpanKind
from receiver import Receiver

from mcpkit.client import Client, EraCache
from support.servers import free_port, kill_group, spawn, subprocess_env, wait_http
from support.waits import eventually

pytestmark = pytest.mark.anyio
CALC = Path(__file__).resolve().parent / "servers" / "calc.py"


@contextlib.contextmanager
def process(cmd: list[str], env: dict[str, str], log: Path, url: str) -> Iterator[None]:
    """``cmd`` running (its output in ``log``) until ``url`` answers HTTP."""
    proc = spawn([sys.executable, "-m", "mcpkit", *cmd], log, env=env, cwd=log.parent)
    try:
        try:
            wait_http(url, proc, log)
        except RuntimeError as exc:
            pytest.fail(f"{cmd[0]} did not start: {exc}")
        yield
    finally:
        kill_group(proc)


def otel_env(receiver: Receiver, service: str) -> dict[str, str]:
    return subprocess_env(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_SERVICE_NAME=service,
        OTEL_BSP_SCHEDULE_DELAY="50",  # export batches quickly (milliseconds)
        OTEL_METRIC_EXPORT_INTERVAL="200",
    )


def hex_ids(span: Any) -> tuple[str, str]:
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


async def test_processes_export_one_trace_over_otlp_http(tmp_path: Path, spans: Any) -> None:
    up_port, gw_port = free_port(), free_port()
    config = tmp_path / "gateway.toml"
    config.write_text(f'[[upstream]]\nname = "calc"\nurl = "http://127.0.0.1:{up_port}/mcp"\n')
    up_log, gw_log = tmp_path / "upstream.log", tmp_path / "gateway.log"
    with (
        Receiver() as rx,
        process(
            [
                "serve",
                str(CALC),
                "--http",
                "--port",
                str(up_port),
                "--otel",
                "--log-format",
                "json",
            ],
            otel_env(rx, "otel-upstream"),
            up_log,
            f"http://127.0.0.1:{up_port}/mcp",
        ),
        process(
            ["gateway", str(config), "--port", str(gw_port), "--otel"],
            otel_env(rx, "otel-gateway"),
            gw_log,
            f"http://127.0.0.1:{gw_port}/livez",
        ),
    ):
        async with Client(
            f"http://127.0.0.1:{gw_port}/mcp", era="modern", era_cache=EraCache()
        ) as client:
            spans.clear()
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result["content"][0]["text"] == "5"
        top = next(
            s
            for s in spans.get_finished_spans()
            if s.name == "tools/call add" and s.kind == SpanKind.CLIENT
        )
        trace_id, top_id = hex_ids(top)

        def in_trace() -> list[tuple[str, Any]] | None:
            found = [
                (svc, s)
                for svc, s in rx.spans()
                if s.trace_id.hex() == trace_id and s.name == "tools/call add"
            ]
            return found if len(found) == 3 else None

        found = eventually(in_trace, what="the gateway's and upstream's spans")
        kinds = {(svc, s.kind): s for svc, s in found}
        gw_server = kinds["otel-gateway", ProtoSpan.SPAN_KIND_SERVER]
        gw_client = kinds["otel-gateway", ProtoSpan.SPAN_KIND_CLIENT]
        up_server = kinds["otel-upstream", ProtoSpan.SPAN_KIND_SERVER]
        assert gw_server.parent_span_id.hex() == top_id
        assert gw_client.parent_span_id == gw_server.span_id
        assert up_server.parent_span_id == gw_client.span_id
        attrs = {a.key: a.value for a in up_server.attributes}
        assert attrs["mcp.method.name"].string_value == "tools/call"
        assert attrs["gen_ai.tool.name"].string_value == "add"
        assert attrs["server.port"].int_value == up_port

        names = eventually(
            lambda: (
                n
                if {"mcp.server.operation.duration", "mcp.client.operation.duration"}
                <= (n := rx.metric_names())
                else None
            ),
            what="the duration histograms",
        )
        assert "mcp.server.operation.duration" in names
        scrape = httpx.get(f"http://127.0.0.1:{gw_port}/metrics", timeout=5).text
        assert "mcp_gateway_requests_total" in scrape  # the gateway's own families stay
        assert "mcp_server_operation_duration_seconds_count" in scrape  # and OTel's join

    lines = [json.loads(line) for line in up_log.read_text().splitlines() if line.startswith("{")]
    adding = [line for line in lines if line["message"] == "adding 2 and 3"]
    assert len(adding) == 1
    assert adding[0]["trace_id"] == trace_id
    assert adding[0]["span_id"] == up_server.span_id.hex()
    assert adding[0]["level"] == "WARNING" and adding[0]["logger"] == "calc"


async def test_serve_metrics_is_prometheus_text(tmp_path: Path, spans: Any) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with process(
        ["serve", str(CALC), "--http", "--port", str(port), "--metrics"],
        subprocess_env(),
        tmp_path / "serve.log",
        f"{base}/mcp",
    ):
        async with Client(f"{base}/mcp", era_cache=EraCache()) as client:
            await client.call_tool("add", {"a": 1, "b": 1})
            await client.call_tool("add", {"a": 1, "b": 2})
        reply = httpx.get(f"{base}/metrics", timeout=5)
        # /metrics passes the same Host/Origin check as /mcp (DNS rebinding)
        evil = httpx.get(f"{base}/metrics", headers={"host": "evil.example"}, timeout=5)
        foreign = httpx.get(f"{base}/metrics", headers={"origin": "https://evil.example"})
    assert evil.status_code == 403 and foreign.status_code == 403
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    # the MCP semantic conventions' buckets, in seconds (not the SDK's millisecond ones)
    bounds = {
        line.split('le="', 1)[1].split('"', 1)[0]
        for line in reply.text.splitlines()
        if line.startswith("mcp_server_operation_duration_seconds_bucket")
    }
    semconv = ("0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "30", "60")
    assert {str(float(b)) for b in (*semconv, "120", "300")} | {"+Inf"} == bounds, bounds
    count = [
        line
        for line in reply.text.splitlines()
        if line.startswith("mcp_server_operation_duration_seconds_count")
        and 'mcp_method_name="tools/call"' in line
        and 'gen_ai_tool_name="add"' in line
    ]
    assert len(count) == 1, reply.text
    assert float(count[0].rsplit(" ", 1)[1]) == 2.0


async def test_host_traces_its_calls_and_logs_json_with_their_ids(
    tmp_path: Path, spans: Any
) -> None:
    """``mcpkit host --otel --log-format json``: its CLIENT span of a ``/call`` and the
    upstream's SERVER span form one trace, and the host's log lines are JSON, those logged
    while that span was current (httpx's request line) stamped with its ids."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"mcpServers": {"calc": {"url": url}}}))
    with (
        Receiver() as rx,
        process(
            ["serve", str(CALC), "--http", "--port", str(port), "--otel"],
            otel_env(rx, "otel-upstream"),
            tmp_path / "upstream.log",
            url,
        ),
    ):
        env = otel_env(rx, "otel-host")
        env["HOME"] = str(tmp_path)  # the host's trust and token files
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcpkit",
                "host",
                "--config",
                str(config),
                "--otel",
                "--log-format",
                "json",
                "--log-level",
                "info",
            ],
            input='/call calc__add {"a": 2, "b": 3}\n/quit\n',
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=90,
        )
        assert run.returncode == 0, run.stderr
        assert "5" in run.stdout

        def call_spans() -> dict[tuple[str, int], Any] | None:
            found = {(svc, s.kind): s for svc, s in rx.spans() if s.name == "tools/call add"}
            return found if len(found) == 2 else None

        found = eventually(call_spans, what="the host's and the upstream's spans")
    host_span = found["otel-host", ProtoSpan.SPAN_KIND_CLIENT]
    up_span = found["otel-upstream", ProtoSpan.SPAN_KIND_SERVER]
    assert up_span.trace_id == host_span.trace_id
    assert up_span.parent_span_id == host_span.span_id
    host_attrs = {a.key: a.value for a in host_span.attributes}
    assert host_attrs["server.port"].int_value == port
    assert host_attrs["jsonrpc.request.id"].string_value

    lines = [json.loads(line) for line in run.stderr.splitlines() if line.strip()]
    assert lines, "no log lines at --log-level info"
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    in_call = [line for line in lines if line.get("span_id") == host_span.span_id.hex()]
    assert in_call, lines
    assert all(line["trace_id"] == host_span.trace_id.hex() for line in in_call)
    assert any(line["logger"] == "httpx" and f"POST {url}" in line["message"] for line in in_call)


def gauge(rx: Receiver, name: str, version: str) -> float | None:
    """The latest exported value of ``name`` for ``mcp.protocol.version=version``."""
    with rx.lock:
        requests = list(rx.metrics)
    value = None
    for request in requests:
        for rm in request.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name != name:
                        continue
                    points = metric.sum.data_points or metric.gauge.data_points
                    for point in points:
                        attrs = {a.key: a.value.string_value for a in point.attributes}
                        if attrs.get("mcp.protocol.version") == version:
                            value = point.as_int or point.as_double
    return value


async def test_stdio_server_exports_its_legacy_session(tmp_path: Path, spans: Any) -> None:
    """``mcpkit serve --otel`` over stdio: its one legacy session is in the sessions gauge
    it exports while a legacy client holds it."""
    with Receiver() as rx:
        env = otel_env(rx, "otel-stdio")
        async with Client(
            [sys.executable, "-m", "mcpkit", "serve", str(CALC), "--otel"],
            era="legacy",
            era_cache=EraCache(),
            env=env,
        ) as client:
            result = await client.call_tool("add", {"a": 1, "b": 1})
            assert result["content"][0]["text"] == "2"
            eventually(
                lambda: gauge(rx, "mcpkit.server.sessions.active", "2025-11-25") == 1,
                what="the sessions gauge at 1",
            )
