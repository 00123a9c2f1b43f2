"""OpenTelemetry SERVER spans and the ``mcp.server.operation.duration`` histogram.

One span per request a server answers, whatever its transport or era, because it is a
middleware on :meth:`Server.dispatch`, the one request path.  Its parent is the trace
context the client put in ``params._meta`` (the conventions' propagation), so the client
span, a gateway's server and client spans and the upstream's server span form one trace;
the span is made current while the handler runs, so a client the handler uses (a gateway
forwarding upstream) parents its CLIENT span on it.

Opt-in (``Server(middleware=[Telemetry()])``, or ``mcpkit serve --otel``) rather than
installed whenever ``opentelemetry-api`` is importable: the API is a common transitive
dependency, and a span per request costs.  With only the API (no SDK set up) it passes
requests through, at one provider check a request; an SDK set up later is used from the
next request on.

MRTR rounds (2026-07-28) are linked: the span of a round that ends in an
``input_required`` result seals its ``traceparent`` into the ``requestState``, and the span
of the retry carrying that state links back to it (attribute ``mcpkit.link`` =
``previous_round``), on whichever replica each round lands.  The link is added once the
state is opened (OpenTelemetry allows links after a span starts), so a request that is not
an MRTR retry pays nothing for it.

A task-backed ``tools/call`` runs this chain inside the task's background work: that span
is an INTERNAL one in a trace of its own, *linked* to the call that created it (the
client span), since it outlives that call.  Tasks are also counted:
``mcpkit.server.tasks.active`` (working now) and ``mcpkit.server.tasks.finished`` by
``mcpkit.task.status`` (``completed``, ``failed``, ``cancelled``); open change streams as
``mcpkit.server.listeners.active`` and initialized legacy sessions as
``mcpkit.server.sessions.active`` (both observed at collection time, free per request).  A
replica that hands task work to ``mcpkit worker`` processes (``task_workers =
"external"``) also reports the Redis queue's depth as ``mcpkit.server.tasks.queued`` by
``mcpkit.task.queue.state`` (``waiting``: not yet taken by a worker; ``running``: taken,
not settled), sampled in the background every ``queue_sample_s`` seconds (a collection
callback cannot wait on Redis).
"""

from __future__ import annotations

import logging
import weakref
from collections import Counter
from collections.abc import Awaitable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ...runtime.legacy_session import live_legacy_sessions
from ...telemetry import otel
from ...types.errors import McpError
from ..mrtr import ROUND_SPAN, RoundSpan
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context
    from ..server import Server

__all__ = ["Telemetry"]

log = logging.getLogger("mcpkit.telemetry")
_PREVIOUS_ROUND = {"mcpkit.link": "previous_round"}


class Telemetry(Middleware):
    """A SERVER span and a duration measurement per request (needs the ``otel`` extra)."""

    def __init__(self, queue_sample_s: float = 5.0) -> None:
        self._otel = otel.api()  # fail now, with the extra's name, not on a request
        _register_gauges(self._otel)
        self.queue_sample_s = queue_sample_s

    def _start_sampling(self, server: Server) -> None:
        try:
            server.spawn(partial(self._sample_queue, server))
        except RuntimeError:  # not running (a direct server.call): nothing to sample for
            _SERVERS.discard(server)  # try again on a later request

    async def _sample_queue(self, server: Server) -> None:
        queue = server.tasks.queue
        while True:
            try:
                depth, running = await queue.depth()
                _QUEUES[server] = (max(0, depth - running), running)
            except Exception:
                log.warning("could not read the task queue's depth", exc_info=True)
            await anyio.sleep(self.queue_sample_s)

    # A plain function, not a coroutine function: with only the API it hands back the
    # rest of the chain's awaitable as it is, so the layer adds no coroutine of its own
    # (its cost is in bench/RESULTS.md).
    def on_request(  # type: ignore[override]
        self, ctx: Context, call_next: CallNext
    ) -> Awaitable[dict[str, Any]]:
        if not otel.recording():  # only the API: every span would be a no-op
            return call_next(ctx)
        return self._traced(ctx, call_next)

    async def _traced(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        server = ctx.server
        if server not in _SERVERS:
            _SERVERS.add(server)
            if getattr(server, "task_workers", "") == "external":
                self._start_sampling(server)
        api = self._otel
        trace = api.trace
        params = ctx.params
        method = ctx.method
        session = ctx.session
        attrs = otel.request_attributes(
            method,
            params,
            request_id=ctx.request_id,
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
                f"{otel.span_name(method, params)} task",
                context=api.context.Context(),
                kind=trace.SpanKind.INTERNAL,
                attributes=attrs,
                links=links,
            )
            active = trace.set_span_in_context(span, remote)
        else:
            span = api.tracer.start_span(
                otel.span_name(method, params),
                context=remote,
                kind=trace.SpanKind.SERVER,
                attributes=attrs,
            )
            active = trace.set_span_in_context(span, remote)
        token = api.context.attach(active)
        modern = ctx.meta.era == "modern"
        if modern:  # an MRTR round seals this span's traceparent for the next one to link
            rounds = RoundSpan(otel.traceparent(span.get_span_context()))
            round_token = ROUND_SPAN.set(rounds)
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
            if modern:
                ROUND_SPAN.reset(round_token)
                if rounds.previous is not None:
                    link = otel.link_to(rounds.previous, _PREVIOUS_ROUND)
                    if link is not None:
                        span.add_link(link.context, link.attributes)
            api.server_duration.record(
                otel.now() - started, otel.metric_attributes(attrs, error_type)
            )
            if task is not None:
                api.tasks_active.add(-1)
                api.tasks_finished.add(1, {"mcpkit.task.status": status})
            span.end()
            api.context.detach(token)


#: Servers that traced a request, for the listeners gauge (read at collection time).
_SERVERS: weakref.WeakSet[Server] = weakref.WeakSet()
#: Protocol versions of legacy sessions seen so far: each reports 0 once its last closes.
_SESSION_VERSIONS: set[str] = set()
#: server -> (waiting, running), the last sample of its task queue.
_QUEUES: weakref.WeakKeyDictionary[Server, tuple[int, int]] = weakref.WeakKeyDictionary()
_gauges: list[Any] = []


def _register_gauges(api: Any) -> None:
    """The gauges, once per process: a meter keeps the first instrument of a name and
    ignores the callbacks of later ones, so one callback covers every server."""
    if _gauges:
        return
    _gauges.append(
        api.meter.create_observable_up_down_counter(
            "mcpkit.server.listeners.active",
            [_observe_listeners],
            unit="{stream}",
            description="Open change-notification streams: subscriptions/listen streams "
            "and the standalone streams of 2025-11-25 sessions.",
        )
    )
    _gauges.append(
        api.meter.create_observable_up_down_counter(
            "mcpkit.server.sessions.active",
            [_observe_sessions],
            unit="{session}",
            description="Initialized legacy (2025-11-25 and older) sessions held by this "
            "process, by mcp.protocol.version (2026-07-28 has no sessions).",
        )
    )
    _gauges.append(
        api.meter.create_observable_gauge(
            "mcpkit.server.tasks.queued",
            [_observe_queues],
            unit="{task}",
            description="Task-backed tool calls in the task workers' queue, by "
            "mcpkit.task.queue.state (waiting for a worker, or running on one).",
        )
    )


def _observe_listeners(options: Any) -> list[Any]:
    observation = otel.api().metrics.Observation
    return [
        observation(server.bus.listener_count, {"mcpkit.server.name": server.info["name"]})
        for server in list(_SERVERS)
    ]


def _observe_sessions(options: Any) -> list[Any]:
    counts = Counter(session.protocol_version for session in live_legacy_sessions())
    _SESSION_VERSIONS.update(counts)
    observation = otel.api().metrics.Observation
    return [
        observation(counts.get(version, 0), {"mcp.protocol.version": version})
        for version in sorted(_SESSION_VERSIONS)
    ]


def _host(value: str | None) -> tuple[str | None, int | None]:
    """``Host: name:port`` (or ``[v6]:port``) as the ``server.address``/``server.port`` pair."""
    if not value:
        return None, None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or (host.startswith("[") != host.endswith("]")):
        return value, None
    return host.strip("[]"), int(port)


def _observe_queues(options: Any) -> list[Any]:
    observation = otel.api().metrics.Observation
    out = []
    for server, (waiting, running) in list(_QUEUES.items()):
        name = server.info["name"]
        out.append(
            observation(waiting, {"mcpkit.server.name": name, "mcpkit.task.queue.state": "waiting"})
        )
        out.append(
            observation(running, {"mcpkit.server.name": name, "mcpkit.task.queue.state": "running"})
        )
    return out
