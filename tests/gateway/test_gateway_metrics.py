"""The gateway's per-request metrics (plain counters cumulated at scrape time) expose
exactly what ``prometheus_client``'s own counter and histogram expose for the same
samples: the ``/metrics`` text did not change when the locks went (issue #20)."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from mcpkit.gateway.metrics import BUCKETS, Metrics

#: The MCP semantic conventions' duration boundaries, in seconds (written out here).
SEMCONV_BOUNDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

SAMPLES = [
    ("tools/call", "bench", "ok", 0.0007),
    ("tools/call", "bench", "ok", 0.01),  # on a bound: counted in that bucket
    ("tools/call", "bench", "error:-32603", 0.003),
    ("tools/call", None, "rate_limited:per-user", 0.0001),
    ("tools/list", "other", "ok", 42.0),  # past the last bound: +Inf only
    ("tools/call", None, "denied", 0.0),
]


def _reference(direct: int) -> bytes:
    """The exposition prometheus_client's own metrics give for SAMPLES."""
    registry = CollectorRegistry()
    requests = Counter(
        "mcp_gateway_requests_total",
        "Requests by method, upstream and outcome",
        ["method", "upstream", "outcome"],
        registry=registry,
    )
    latency = Histogram(
        "mcp_gateway_request_seconds",
        "Request latency through the gateway",
        ["method", "upstream"],
        registry=registry,
        buckets=BUCKETS,
    )
    limited = Counter(
        "mcp_gateway_rate_limited_total",
        "Requests refused by a rate limit rule",
        ["rule"],
        registry=registry,
    )
    up = Gauge(
        "mcp_gateway_upstream_up",
        "1 while the gateway holds a live connection to the upstream, else 0",
        ["upstream"],
        registry=registry,
    )
    calls = Counter(
        "mcp_gateway_direct_calls_total",
        "tools/call requests taken by the direct path (the rest take the server's path)",
        registry=registry,
    )
    Counter(
        "mcp_gateway_config_reloads_total",
        "Configuration reloads by result (applied or rejected)",
        ["result"],
        registry=registry,
    )
    for method, upstream, outcome, seconds in SAMPLES:
        kind, _, rule = outcome.partition(":")
        requests.labels(method, upstream or "-", kind).inc()
        latency.labels(method, upstream or "-").observe(seconds)
        if kind == "rate_limited":
            limited.labels(rule).inc()
    up.labels("bench").set(1)
    calls.inc(direct)
    return generate_latest(registry)


def _without_created(text: bytes) -> str:
    """The exposition with the ``_created`` timestamps (creation times differ) blanked."""
    return re.sub(r"(_created(?:\{[^}]*\})?) \S+", r"\1 T", text.decode())


def test_the_exposition_is_prometheus_clients() -> None:
    metrics = Metrics()
    for sample in SAMPLES:
        metrics.observe(*sample)
    metrics.direct_calls += 3
    body, _ = metrics.render({"bench": True})
    assert _without_created(body) == _without_created(_reference(3))
    assert (
        'mcp_gateway_request_seconds_bucket{le="0.01",method="tools/call",upstream="bench"} 3.0'
        in (body.decode())
    )


def test_latency_buckets_are_the_semconv_ones() -> None:
    metrics = Metrics()
    metrics.observe("tools/call", "bench", "ok", 0.004)
    body, _ = metrics.render({"bench": True})
    bounds = re.findall(r'mcp_gateway_request_seconds_bucket\{le="([^"]+)"', body.decode())
    assert bounds == [*(str(float(b)) for b in SEMCONV_BOUNDS), "+Inf"]


def test_disabled_metrics_count_nothing() -> None:
    metrics = Metrics(enabled=False)
    metrics.observe("tools/call", "bench", "ok", 0.001)
    assert metrics.render() == (b"# metrics disabled\n", "text/plain")
