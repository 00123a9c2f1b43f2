"""OpenTelemetry SERVER spans and the ``mcp.server.operation.duration`` histogram.

One span per request a server answers, whatever its transport or era, because it is a
middleware on :meth:`Server.dispatch`, the one request path.  Its parent is the trace
context the client put in ``params._meta`` (the conventions' propagation), so the client
span, a gateway's server and client spans and the upstream's server span form one trace;
the span is made current while the handler runs, so a client the handler uses (a gateway
forwarding upstream) parents its CLIENT span on it.

Opt-in (``Server(middleware=[Telemetry()])``, or ``mcpkit serve --otel``) rather than
installed whenever ``opentelemetry-api`` is importable: the API is a common transitive
dependency, and making a span current means entering a context, so this middleware
``waits``: a plain ``def`` tool registered ``inline=True`` then gets a task of its own
over stdio instead of starting on the reader (see ``Middleware.waits``).

A task-backed ``tools/call`` runs this chain inside the task's background work: that span
is an INTERNAL one in a trace of its own, *linked* to the call that created it (the
client span), since it outlives that call.  Tasks are also counted:
``mcpkit.server.tasks.active`` (working now) and ``mcpkit.server.tasks.finished`` by
``mcpkit.task.status`` (``completed``, ``failed``, ``cancelled``); open change streams as
``mcpkit.server.listeners.active`` (observed at collection time, free per request).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import anyio

from ...telemetry import otel
from ...types.errors import McpError
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["Telemetry"]


class Telemetry(Middleware):
    """A SERVER span and a duration measurement per request (needs the ``otel`` extra)."""

    waits = True  # it enters a context (see the module docstring)

    def __init__(self) -> None:
        self._otel = otel.api()  # fail now, with the extra's name, not on a request
        #: Servers seen, for the listeners gauge (read at collection time, not per request).
        self._servers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._otel.meter.create_observable_up_down_counter(
            "mcpkit.server.listeners.active", [self._observe_listeners], unit="{stream}",
            description="Open change-notification streams: subscriptions/listen streams "
            "and the standalone streams of 2025-11-25 sessions.")

    def _observe_listeners(self, options: Any) -> list[Any]:
        observation = self._otel.metrics.Observation
        return [observation(server.bus.listener_count, {"mcpkit.server.name": server.info["name"]})
                for server in list(self._servers)]

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if not otel.recording():  # only the API: every span would be a no-op
            return await call_next(ctx)
        if ctx.server not in self._servers:
            self._servers.add(ctx.server)
        api = self._otel
        trace = api.trace
        params = ctx.params
        method = ctx.method
        session = ctx.session
        attrs = otel.request_attributes(
            method, params, request_id=ctx.request_id,
            protocol_version=ctx.meta.protocol_version,
            session_id=getattr(session, "id", None),
        )
        exchange = ctx.exchange
        transport = getattr(exchange, "network_transport", None)
        host, port = _host(exchange.headers.get("host")) if transport == "tcp" else (None, None)
        attrs.update(otel.address_attributes(host, port, transport))
        meta = params.get("_meta")
        remote = otel.extract(meta) if otel.has_trace_keys(meta) else None
        task = ctx._task
        if task is not None:  # a task's background work: its own trace, linked
            attrs["mcpkit.task.id"] = task.task_id
            caller = trace.get_current_span(remote).get_span_context() if remote else None
            links = [trace.Link(caller)] if caller is not None and caller.is_valid else ()
            span = api.tracer.start_span(
                f"{otel.span_name(method, params)} task", context=api.context.Context(),
                kind=trace.SpanKind.INTERNAL, attributes=attrs, links=links)
            active = trace.set_span_in_context(span, remote)
        else:
            span = api.tracer.start_span(
                otel.span_name(method, params), context=remote,
                kind=trace.SpanKind.SERVER, attributes=attrs)
            active = trace.set_span_in_context(span, remote)
        token = api.context.attach(active)
        error_type: str | None = None
        status = "failed"
        if task is not None:
            api.tasks_active.add(1)
        started = otel.now()
        try:
            result = await call_next(ctx)
            status = "completed"
            if result.get("isError") is True:
                error_type = "tool_error"
                otel.fail(span, error_type)
            return result
        except McpError as err:
            error_type = str(err.code)
            otel.fail(span, error_type, err.message, err.code)
            raise
        except BaseException as exc:
            error_type = type(exc).__qualname__
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                status = "cancelled"
            otel.fail(span, error_type, str(exc) or None)
            raise
        finally:
            api.server_duration.record(otel.now() - started,
                                       otel.metric_attributes(attrs, error_type))
            if task is not None:
                api.tasks_active.add(-1)
                api.tasks_finished.add(1, {"mcpkit.task.status": status})
            span.end()
            api.context.detach(token)


def _host(value: str | None) -> tuple[str | None, int | None]:
    """``Host: name:port`` (or ``[v6]:port``) as the ``server.address``/``server.port`` pair."""
    if not value:
        return None, None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or (host.startswith("[") != host.endswith("]")):
        return value, None
    return host.strip("[]"), int(port)
