"""Prometheus metrics for the gateway (``/metrics``), via ``prometheus_client``.

Each gateway keeps its own registry (several gateways in one process, as in tests, must
not collide).
"""

from __future__ import annotations

from typing import Any


class Metrics:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        #: Also serve ``prometheus_client``'s default registry, where ``--otel`` keeps the
        #: OpenTelemetry meters (``mcp_server_operation_duration_seconds``, ...).
        self.with_otel = False
        self._registry: Any = None
        #: (method, upstream, outcome kind) -> its counter and histogram children:
        #: ``labels()`` validates and locks on every call, and the series never go away.
        self._series: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        if not enabled:
            return
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
        except ImportError:  # pragma: no cover - optional extra
            self.enabled = False
            return
        self._registry = CollectorRegistry()
        self.requests = Counter(
            "mcp_gateway_requests_total",
            "Requests by method, upstream and outcome",
            ["method", "upstream", "outcome"],
            registry=self._registry,
        )
        self.latency = Histogram(
            "mcp_gateway_request_seconds",
            "Request latency through the gateway",
            ["method", "upstream"],
            registry=self._registry,
            buckets=(
                0.0005,
                0.001,
                0.0025,
                0.005,
                0.01,
                0.025,
                0.05,
                0.1,
                0.25,
                0.5,
                1,
                2.5,
                5,
                10,
            ),
        )
        self.rate_limited = Counter(
            "mcp_gateway_rate_limited_total",
            "Requests refused by a rate limit rule",
            ["rule"],
            registry=self._registry,
        )

        self.upstream_up = Gauge(
            "mcp_gateway_upstream_up",
            "1 while the gateway holds a live connection to the upstream, else 0",
            ["upstream"],
            registry=self._registry,
        )
        self.direct = Counter(
            "mcp_gateway_direct_calls_total",
            "tools/call requests taken by the direct path (the rest take the server's path)",
            registry=self._registry,
        )
        self.reloads = Counter(
            "mcp_gateway_config_reloads_total",
            "Configuration reloads by result (applied or rejected)",
            ["result"],
            registry=self._registry,
        )

    def observe(self, method: str, upstream: str | None, outcome: str, seconds: float) -> None:
        if not self.enabled:
            return
        label = upstream or "-"
        kind = outcome.split(":", 1)[0]
        key = (method, label, kind)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = (
                self.requests.labels(method, label, kind),
                self.latency.labels(method, label),
            )
        series[0].inc()
        series[1].observe(seconds)
        if kind == "rate_limited":
            self.rate_limited.labels(outcome.split(":", 1)[1]).inc()

    def render(self, upstreams: dict[str, bool] | None = None) -> tuple[bytes, str]:
        """The text exposition; ``upstreams`` (name -> up) refreshes the gauge first, so
        it is exact at scrape time, and an upstream no longer configured disappears."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if not self.enabled:
            return b"# metrics disabled\n", "text/plain"
        if upstreams is not None:
            self.upstream_up.clear()
            for name, up in upstreams.items():
                self.upstream_up.labels(name).set(1 if up else 0)
        body = generate_latest(self._registry)
        if self.with_otel:
            from prometheus_client import REGISTRY

            body += generate_latest(REGISTRY)
        return body, CONTENT_TYPE_LATEST
