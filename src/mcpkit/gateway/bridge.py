"""The gateway's bridge between a front request and an upstream call: which input
requests go back to the front client, which ``_meta`` travels upstream, and how an
upstream's answer is made the gateway's own."""

from __future__ import annotations

from typing import Any

import anyio

from ..protocol.headers import InvalidHeaderAnnotation, header_params
from ..server.context import Context
from ..server.mrtr import NeedInput
from ..types.errors import McpError
from ..types.versions import META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_SERVER_INFO

TRACE_KEYS = ("traceparent", "tracestate", "baggage")


class ProxyTool:
    """What the HTTP transport needs of a tool: its ``Mcp-Param-*`` parameters, and
    that it is not ``inline`` (a forwarded call always waits on the upstream)."""

    __slots__ = ("header_params", "wire")

    #: Never run without a cancel scope: the forwarded call awaits the network.
    inline = False

    def __init__(self, wire: dict[str, Any]) -> None:
        self.wire = wire
        try:
            schema = wire.get("inputSchema")
            self.header_params = header_params(schema) if isinstance(schema, dict) else ()
        except InvalidHeaderAnnotation:
            self.header_params = ()


class FrontCall:
    """Bridges an upstream's input requests to the front request's Context."""

    __slots__ = ("ctx", "failure", "need", "scope")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.need: NeedInput | None = None
        #: The front client cannot answer (e.g. it lacks the capability): the front's error.
        self.failure: McpError | None = None
        self.scope: anyio.CancelScope | None = None

    def _stop(self) -> None:
        if self.scope is not None:
            self.scope.cancel()

    async def ask_upstream_input(self, what: str, params: dict[str, Any]) -> Any:
        ctx = self.ctx
        try:
            if what == "elicit":
                return await ctx.elicit(params.get("message", ""), params.get("requestedSchema"))
            if what == "elicit_url":
                return await ctx.elicit_url(params.get("message", ""), params.get("url", ""))
            if what == "sample":
                rest = {
                    k: v
                    for k, v in params.items()
                    if k not in ("messages", "maxTokens", "systemPrompt")
                }
                return await ctx.sample(
                    params.get("messages", []),
                    max_tokens=int(params.get("maxTokens", 1000)),
                    system_prompt=params.get("systemPrompt"),
                    **rest,
                )
            return await ctx.list_roots()
        except NeedInput as need:
            # Modern front client: stop the upstream call, answer input_required.
            self.need = need
            self._stop()
            raise
        except McpError as err:
            # The front client cannot be asked (missing capability...): that is the answer
            # to its request, not an error of the upstream's tool.
            self.failure = err
            self._stop()
            raise


def bridged_meta(ctx: Context) -> dict[str, Any] | None:
    """What of the front request's ``_meta`` a bridged upstream call carries: the log
    level and the W3C trace context."""
    meta = trace_meta(ctx)
    level = ctx.meta.log_level or (ctx.session.log_level if ctx.session is not None else None)
    if level is not None:
        meta[META_LOG_LEVEL] = level
    return meta or None


def trace_meta(ctx: Context) -> dict[str, Any]:
    """W3C trace context (``traceparent``, ``tracestate``, ``baggage``) from the front
    request's ``_meta``, passed on so the upstream's spans join the caller's trace."""
    front = ctx.params.get("_meta")
    if not isinstance(front, dict):
        return {}
    return {k: v for k in TRACE_KEYS if isinstance(v := front.get(k), str)}


def progress_forwarder(ctx: Context) -> Any:
    """Relay an upstream's progress to the front client (when it asked for progress)."""
    if ctx.meta.progress_token is None:
        return None

    async def forward(update: dict[str, Any]) -> None:
        progress = update.get("progress")
        if isinstance(progress, (int, float)):
            await ctx.report_progress(progress, update.get("total"), update.get("message"))

    return forward


def clean(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "_meta"}


def meta_for(ctx: Context) -> dict[str, Any]:
    """The front client's own capabilities and log level, for the upstream request."""
    meta: dict[str, Any] = {META_CLIENT_CAPABILITIES: ctx.meta.client_capabilities}
    meta.update(trace_meta(ctx))
    level = ctx.meta.log_level or (ctx.session.log_level if ctx.session is not None else None)
    if level is not None:
        meta[META_LOG_LEVEL] = level
    return meta


def strip(result: dict[str, Any]) -> dict[str, Any]:
    """Drop the upstream's serverInfo: the front answers as the gateway."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and META_SERVER_INFO in meta:
        rest = {k: v for k, v in meta.items() if k != META_SERVER_INFO}
        result = {k: v for k, v in result.items() if k != "_meta"}
        if rest:
            result["_meta"] = rest
    return result
