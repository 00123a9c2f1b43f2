"""Prometheus metrics for the gateway (``/metrics``), via ``prometheus_client``.

Each gateway keeps its own registry (several gateways in one process, as in tests, must
not collide).

The two series every request updates (``mcp_gateway_requests_total`` and
``mcp_gateway_request_seconds``) and the shortcut's counter are plain numbers the
event loop adds to, turned into metric families when ``/metrics`` is scraped
(:class:`_Hot`): ``prometheus_client``'s own counter and histogram take a lock and go
through a few layers on every update, a cost paid on every forwarded call.  The text
served is the same (``tests/gateway/test_gateway_metrics.py`` compares it with theirs).
Only the event loop's thread updates or scrapes them, so they need no lock.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from ..telemetry.otel import DURATION_BUCKETS

#: At most this many (method, upstream, outcome) kept by :meth:`Metrics.observe`.
_SERIES_MAX = 1024
#: The latency histogram's upper bounds, in seconds (+Inf is added): the MCP semantic
#: conventions' duration buckets, the same as the server's and client's OTel histograms.
BUCKETS = DURATION_BUCKETS


class _Series:
    """One (method, upstream, outcome kind)'s requests and one (method, upstream)'s
    latencies, counted as they come and cumulated at scrape time."""

    __slots__ = ("buckets", "count", "created", "sum")

    def __init__(self, size: int) -> None:
        self.count = 0
        self.sum = 0.0
        self.buckets = [0] * size  # per bucket, not cumulative (one add per sample)
        self.created = time.time()


class Metrics:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        #: Also serve ``prometheus_client``'s default registry, where ``--otel`` keeps the
        #: OpenTelemetry meters (``mcp_server_operation_duration_seconds``, ...).
        self.with_otel = False
        self._registry: Any = None
        #: (method, upstream, outcome kind) -> its request count; (method, upstream) -> its
        #: latencies (the series never go away, as prometheus_client's children do not).
        self._requests: dict[tuple[str, str, str], _Series] = {}
        self._latency: dict[tuple[str, str], _Series] = {}
        self._bounds = (*map(float, BUCKETS), float("inf"))
        #: (method, upstream, outcome) as given -> what :meth:`observe` adds to.
        self._series: dict[tuple[str, str | None, str], tuple[_Series, _Series, str | None]] = {}
        #: tools/call requests the ``tools/call`` handler's shortcut took (a plain forwarded
        #: call sent straight to its upstream), and when it first took one.
        self.direct_calls = 0
        self._direct_created = time.time()
        if not enabled:
            return
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge
        except ImportError:  # pragma: no cover - optional extra
            self.enabled = False
            return
        self._registry = CollectorRegistry()
        self._registry.register(_Hot(self, "requests"))
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
        self._registry.register(_Hot(self, "direct"))
        self.reloads = Counter(
            "mcp_gateway_config_reloads_total",
            "Configuration reloads by result (applied or rejected)",
            ["result"],
            registry=self._registry,
        )

    def observe(self, method: str, upstream: str | None, outcome: str, seconds: float) -> None:
        """Count one request and its latency (in the event loop's thread)."""
        if not self.enabled:
            return
        series = self._series.get((method, upstream, outcome))
        if series is None:
            series = self._new_series(method, upstream, outcome)
        counted, timed, rule = series
        counted.count += 1
        timed.count += 1
        timed.sum += seconds
        timed.buckets[bisect_left(self._bounds, seconds)] += 1
        if rule is not None:
            self.rate_limited.labels(rule).inc()

    def _new_series(
        self, method: str, upstream: str | None, outcome: str
    ) -> tuple[_Series, _Series, str | None]:
        """The series one (method, upstream, outcome) adds to, and the rule of a
        ``rate_limited:<rule>`` outcome; found once, then kept (bounded: outcomes are
        few, but error codes are the upstreams')."""
        label = upstream or "-"
        kind, _, rule = outcome.partition(":")
        counted = self._requests.get((method, label, kind))
        if counted is None:
            counted = self._requests[(method, label, kind)] = _Series(0)
        timed = self._latency.get((method, label))
        if timed is None:
            timed = self._latency[(method, label)] = _Series(len(self._bounds))
        series = (counted, timed, rule if kind == "rate_limited" else None)
        if len(self._series) >= _SERIES_MAX:
            self._series.clear()
        self._series[(method, upstream, outcome)] = series
        return series

    def families(self, which: str) -> Iterator[Any]:
        """The metric families of the plain counters, as ``prometheus_client``'s own
        counter and histogram would expose them (``_created`` samples included)."""
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
        from prometheus_client.samples import Sample

        if which == "direct":
            direct = CounterMetricFamily(
                "mcp_gateway_direct_calls",
                "tools/call requests taken by the direct path (the rest take the server's path)",
            )
            direct.add_metric([], float(self.direct_calls), created=self._direct_created)
            yield direct
            return
        requests = CounterMetricFamily(
            "mcp_gateway_requests",
            "Requests by method, upstream and outcome",
            labels=["method", "upstream", "outcome"],
        )
        for key, counted in list(self._requests.items()):
            requests.add_metric(list(key), float(counted.count), created=counted.created)
        yield requests
        latency = HistogramMetricFamily(
            "mcp_gateway_request_seconds",
            "Request latency through the gateway",
            labels=["method", "upstream"],
        )
        bounds = [_le(b) for b in self._bounds]
        for (method, upstream), timed in list(self._latency.items()):
            total = 0.0
            cumulative = []
            for bound, count in zip(bounds, timed.buckets, strict=True):
                total += count
                cumulative.append((bound, total))
            latency.add_metric([method, upstream], cumulative, timed.sum)
            labels = {"method": method, "upstream": upstream}
            latency.samples.append(Sample(latency.name + "_created", labels, timed.created))
        yield latency

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


def _le(bound: float) -> str:
    """A bucket's ``le`` label as ``prometheus_client`` writes it."""
    from prometheus_client.utils import floatToGoString

    text: str = floatToGoString(bound)  # type: ignore[no-untyped-call]
    return text


class _Hot:
    """A ``prometheus_client`` collector for :class:`Metrics`' plain counters."""

    def __init__(self, metrics: Metrics, which: str) -> None:
        self.metrics = metrics
        self.which = which

    def collect(self) -> Iterator[Any]:
        """Read by ``generate_latest`` at each scrape."""
        return self.metrics.families(self.which)
