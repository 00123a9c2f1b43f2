"""OpenTelemetry CLIENT spans and ``mcp.client.operation.duration`` for each request sent.

The span covers one wire request (with its retries after a version switch or an expired
legacy session), is current while the request is sent so that the ``_meta`` trace context
names it as the parent of the server's span, and is ended when the answer arrives.  Each
MRTR round is its own request and its own span; a round that answers an ``input_required``
result (it carries ``inputResponses`` or ``requestState``) is *linked* to the span of the
round before it in the same task, so a trace viewer shows the rounds as one conversation.
``jsonrpc.request.id`` is the id the transport minted for the request (the first one, if
it was retried; a request sent from a callback while this one waits is not it): each
transport numbers its own requests, so the span collects it through
:data:`~mcpkit.protocol.correlation.SENT_IDS` rather than choosing it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ..protocol.correlation import SENT_IDS
from ..telemetry import otel
from ..types.errors import McpError

__all__ = ["enabled", "inject", "traced"]

inject = otel.inject


def enabled(option: bool | None) -> bool:
    """``ClientOptions.telemetry``, None meaning the process default (``--otel``)."""
    return otel.client_default() if option is None else option


async def traced(
    method: str,
    params: Mapping[str, Any],
    server_key: str,
    protocol_version: str,
    session_id: str | None,
    send: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    if not otel.recording():
        return await send()
    api = otel.api()
    trace = api.trace
    attrs = otel.request_attributes(
        method, params, protocol_version=protocol_version or None, session_id=session_id
    )
    attrs.update(_address(server_key))
    links: tuple[Any, ...] | list[Any] = ()
    if "inputResponses" in params or "requestState" in params:
        previous = otel.LAST_CLIENT_SPAN.get()
        if previous is not None:
            links = [trace.Link(previous, {"mcpkit.link": "previous_round"})]
    span = api.tracer.start_span(
        otel.span_name(method, params), kind=trace.SpanKind.CLIENT, attributes=attrs, links=links
    )
    token = api.context.attach(trace.set_span_in_context(span))
    sent: list[Any] = []
    sink = SENT_IDS.set(sent)
    error_type: str | None = None
    started = otel.now()
    try:
        result = await send()
        if result.get("isError") is True:
            error_type = "tool_error"
            otel.fail(span, error_type)
        return result
    except McpError as err:  # ServerError: the server's JSON-RPC error
        error_type = str(err.code)
        otel.fail(span, error_type, err.message, err.code)
        raise
    except BaseException as exc:
        error_type = type(exc).__qualname__
        otel.fail(span, error_type, str(exc) or None)
        raise
    finally:
        SENT_IDS.reset(sink)
        if sent:
            span.set_attribute("jsonrpc.request.id", str(sent[0]))
        api.client_duration.record(otel.now() - started, otel.metric_attributes(attrs, error_type))
        span.end()
        api.context.detach(token)
        otel.LAST_CLIENT_SPAN.set(span.get_span_context())


def _address(server_key: str) -> dict[str, Any]:
    """``network.transport``, ``server.address``, ``server.port`` from the transport's key
    (``http:<url>``, ``sse:<url>``, ``stdio:<command>``)."""
    kind, _, rest = server_key.partition(":")
    if kind == "stdio":
        return otel.address_attributes(None, None, "pipe")
    if kind in ("http", "sse"):
        try:
            url = urlsplit(rest)
            return otel.address_attributes(url.hostname, url.port, "tcp")
        except ValueError:
            return otel.address_attributes(None, None, "tcp")
    return {}
