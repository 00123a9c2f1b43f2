"""Spans and duration histograms per the OTel MCP conventions, shared by server and client.

Everything OpenTelemetry is imported on first use (:func:`api`), never at import time: the
server and client import this module unconditionally, and ``import mcpkit`` must stay
cheap and must not need the ``otel`` extra.  The functions here take plain values (method,
params, ids) rather than a server ``Context`` so that this layer stays below both roles.
"""

from __future__ import annotations

import contextvars
import importlib
import time
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, TypeGuard

from ..types.extras import available as _importable
from ..types.extras import require

TRACE_KEYS = ("traceparent", "tracestate", "baggage")
#: Bucket boundaries of every duration histogram, in seconds, as the MCP semantic
#: conventions advise for ``mcp.{server,client}.operation.duration`` (0.01 s to 300 s):
#: the SDK's default boundaries are millisecond-scale and would put every request under 5.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Methods whose span name carries ``params.name`` as its low-cardinality target.
_NAMED = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}

_api: SimpleNamespace | None = None
_recording = False
_next_check = 0.0
#: Whether clients trace when their options leave it open (``FeatureOptions.telemetry``
#: None): the command line's ``--otel`` turns it on for the gateway's upstream clients.
_client_default = False
#: The span context of the last CLIENT span this task sent: the next MRTR round links to it.
LAST_CLIENT_SPAN: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "mcpkit_last_client_span", default=None
)


def available() -> bool:
    """Whether ``opentelemetry-api`` is installed (without importing it)."""
    return _importable("opentelemetry.trace")


def set_client_default(enabled: bool) -> None:
    """Trace every client whose ``FeatureOptions.telemetry`` is None (the default)."""
    global _client_default
    _client_default = enabled


def client_default() -> bool:
    return _client_default


def api() -> SimpleNamespace:
    """The OpenTelemetry API modules, the tracer and the two histograms (built once)."""
    global _api
    if _api is None:
        trace = require("opentelemetry.trace", "otel", "OpenTelemetry tracing")
        metrics = importlib.import_module("opentelemetry.metrics")
        context = importlib.import_module("opentelemetry.context")
        propagate = importlib.import_module("opentelemetry.propagate")
        status = importlib.import_module("opentelemetry.trace.status")
        version = _version()
        meter = metrics.get_meter("mcpkit", version)
        _api = SimpleNamespace(
            trace=trace,
            metrics=metrics,
            context=context,
            propagate=propagate,
            Status=status.Status,
            ERROR=status.StatusCode.ERROR,
            tracer=trace.get_tracer("mcpkit", version),
            meter=meter,
            server_duration=meter.create_histogram(
                "mcp.server.operation.duration",
                unit="s",
                description="MCP request or notification duration as observed on the "
                "receiver from the time it was received until the result or ack is sent.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            ),
            client_duration=meter.create_histogram(
                "mcp.client.operation.duration",
                unit="s",
                description="The duration of the MCP request or notification as observed "
                "on the sender from the time it was sent until the response or ack is "
                "received.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            ),
            tasks_active=meter.create_up_down_counter(
                "mcpkit.server.tasks.active",
                unit="{task}",
                description="Task-backed tool calls whose background work is running.",
            ),
            tasks_finished=meter.create_counter(
                "mcpkit.server.tasks.finished",
                unit="{task}",
                description="Task-backed tool calls finished, by mcpkit.task.status.",
            ),
        )
    return _api


def _version() -> str:
    """The installed distribution's version (the package root is above this layer)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcpkit")
    except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
        return "0"


def recording() -> bool:
    """Whether an SDK (or any real provider) is installed for traces or metrics.  With
    only the API, every span and measurement is a no-op: the middleware and the client
    then skip their work entirely.  Asked on every request, so it is cached: a provider,
    once set, is never unset (the API refuses to override one), so True is final; False
    is looked at again at most once a second, because the API's own getters are not free
    (an ``os.environ`` lookup per call) next to the cost of a whole request.
    :func:`recheck` forgets the cache (``configure`` calls it)."""
    global _recording, _next_check
    if _recording:
        return True
    now = time.monotonic()
    if now < _next_check:
        return False
    _next_check = now + 1.0
    _recording = _providers_set()
    return _recording


def recheck() -> None:
    """Look at the providers again on the next request (after setting one up in code,
    when a request within the last second may have found none)."""
    global _next_check
    _next_check = 0.0


def _providers_set() -> bool:
    """The metrics API has no public name for its proxy provider (the stand-in before one
    is set), hence the class-name check: the one place that relies on it."""
    otel = api()
    if not isinstance(
        otel.trace.get_tracer_provider(),
        (otel.trace.ProxyTracerProvider, otel.trace.NoOpTracerProvider),
    ):
        return True
    meter_provider = otel.metrics.get_meter_provider()
    return not (
        isinstance(meter_provider, otel.metrics.NoOpMeterProvider)
        or type(meter_provider).__name__ == "_ProxyMeterProvider"
    )


def span_name(method: str, params: Mapping[str, Any]) -> str:
    """``{mcp.method.name} {target}``: the tool or prompt name, never a resource URI
    (high cardinality, as the conventions advise)."""
    if method in _NAMED:
        name = params.get("name")
        if isinstance(name, str):
            return f"{method} {name}"
    return method


def request_attributes(
    method: str,
    params: Mapping[str, Any],
    *,
    request_id: object = None,
    protocol_version: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """The attributes both sides share (the conventions' client and server tables)."""
    attrs: dict[str, Any] = {"mcp.method.name": method}
    key = _NAMED.get(method)
    if key is not None:
        name = params.get("name")
        if isinstance(name, str):
            attrs[key] = name
        if method == "tools/call":
            attrs["gen_ai.operation.name"] = "execute_tool"
    uri = params.get("uri")
    if isinstance(uri, str) and method.startswith("resources/"):
        attrs["mcp.resource.uri"] = uri
    if request_id is not None:
        attrs["jsonrpc.request.id"] = str(request_id)
    if protocol_version:
        attrs["mcp.protocol.version"] = protocol_version
    if session_id:
        attrs["mcp.session.id"] = session_id
    return attrs


def address_attributes(host: str | None, port: int | None, transport: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if transport:
        attrs["network.transport"] = transport
    if host:
        attrs["server.address"] = host
        if port:
            attrs["server.port"] = port
    return attrs


def has_trace_keys(meta: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(meta, dict) and "traceparent" in meta


def extract(meta: Mapping[str, Any]) -> Any:
    """The OTel context carried by a request's ``_meta`` (the configured propagators)."""
    carrier = {k: v for k in TRACE_KEYS if isinstance(v := meta.get(k), str)}
    return api().propagate.extract(carrier)


def inject() -> dict[str, str]:
    """The current context as ``_meta`` keys (``traceparent``, ...)."""
    carrier: dict[str, str] = {}
    api().propagate.inject(carrier)
    return {k: v for k, v in carrier.items() if k in TRACE_KEYS}


def traceparent(span_context: Any) -> str:
    """A span context as a W3C ``traceparent`` value (to be sealed and linked later)."""
    return (
        f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
        f"{int(span_context.trace_flags):02x}"
    )


def link_to(value: str, attributes: Mapping[str, Any]) -> Any:
    """A link to the span a ``traceparent`` value names, or None if it is malformed."""
    parts = value.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    otel = api()
    try:
        context = otel.trace.SpanContext(
            int(parts[1], 16),
            int(parts[2], 16),
            is_remote=True,
            trace_flags=otel.trace.TraceFlags(int(parts[3], 16) & 0xFF),
        )
    except ValueError:
        return None
    return otel.trace.Link(context, attributes) if context.is_valid else None


def fail(span: Any, error_type: str, message: str | None = None, code: object = None) -> None:
    """Mark ``span`` failed as the conventions say: ``error.type``, status ERROR with the
    JSON-RPC error message, ``rpc.response.status_code`` when there is a code."""
    otel = api()
    span.set_attribute("error.type", error_type)
    if code is not None:
        span.set_attribute("rpc.response.status_code", str(code))
    span.set_status(otel.Status(otel.ERROR, message))


def metric_attributes(attrs: Mapping[str, Any], error_type: str | None) -> dict[str, Any]:
    """The low-cardinality subset of span attributes recorded on the histograms."""
    out = {k: v for k, v in attrs.items() if k in _METRIC_KEYS}
    if error_type is not None:
        out["error.type"] = error_type
    return out


_METRIC_KEYS = frozenset(
    {
        "mcp.method.name",
        "gen_ai.tool.name",
        "gen_ai.prompt.name",
        "gen_ai.operation.name",
        "mcp.protocol.version",
        "network.transport",
    }
)

now = time.perf_counter
