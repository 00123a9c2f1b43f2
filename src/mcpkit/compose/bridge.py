"""Era bridging for a proxy: an upstream's input requests asked of the front client, and
the front request's ``_meta`` that travels upstream.

Two directions, one mechanism.  The upstream call runs through the pooled
:class:`~mcpkit.client.Client`, whose elicitation, sampling and roots callbacks are
answered by the *front* request's :class:`~mcpkit.server.Context` (``ctx.elicit`` and
friends).  A legacy front client then gets a real server->client request; a modern one
makes ``ctx.elicit`` raise :class:`~mcpkit.server.mrtr.NeedInput`, which stops the
upstream call, and the proxy answers ``input_required`` with its own sealed
``requestState``.  The retry replays the upstream call, and the answers given so far are
handed out in order (the server framework's MRTR rounds do that).

Which front request an upstream input request belongs to: the one whose task runs the
upstream call (a context variable) when the client asks from that task (MRTR rounds of a
modern upstream); a legacy upstream's requests arrive on the client's reader task, so the
single call in flight is taken, and with several in flight the request is refused rather
than guessed.

URL elicitation crosses too, in the front's era: an upstream's URL-mode
``elicitation/create``, or its ``-32042`` (the client shows its pages to the same callback),
becomes the front's ``ctx.elicit_url`` (a URL-mode request on 2025-11-25, an input round on
2026-07-28).  The completion is relayed back: a page the front client accepted is
completed (``notifications/elicitation/complete`` to a 2025-11-25 front, with the id it
was asked with) once the upstream call it was asked for has answered, since the upstream
went on only after the user finished there.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.negotiation import RequestMeta
from ..server import handlers as server_handlers
from ..server.context import Context
from ..server.mrtr import NeedInput
from ..types.errors import INTERNAL_ERROR, McpError
from ..types.versions import META_CLIENT_CAPABILITIES, META_LOG_LEVEL

if TYPE_CHECKING:
    from ..server.server import Server
    from ..server.url_elicitation import UrlElicitation
    from .lane import ProgressRelay

__all__ = [
    "FrontCall",
    "Fronts",
    "bridged_call",
    "forwarded_meta",
    "passed_meta",
    "progress_relay",
]

TRACE_KEYS = ("traceparent", "tracestate", "baggage")
log = logging.getLogger("mcpkit.compose")
_current: contextvars.ContextVar[FrontCall | None] = contextvars.ContextVar(
    "mcpkit_compose_front", default=None
)


class FrontCall:
    """One front request while its upstream call runs."""

    __slots__ = ("ctx", "failure", "need", "pages", "scope")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.need: NeedInput | None = None
        #: The front client cannot answer (e.g. lacks the capability): the front's error.
        self.failure: McpError | None = None
        self.scope = anyio.CancelScope()
        #: The URL elicitations the front client accepted, to complete when it answers.
        self.pages: list[UrlElicitation] = []

    async def ask(self, what: str, params: dict[str, Any]) -> Any:
        ctx = self.ctx
        try:
            if what == "elicit":
                return await ctx.elicit(params.get("message", ""), params.get("requestedSchema"))
            if what == "elicit_url":
                handle = await ctx.elicit_url(
                    params.get("message", ""), params.get("url", ""), params.get("elicitationId")
                )
                if handle.accepted:
                    self.pages.append(handle)
                return {"action": handle.action}
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
        except NeedInput as need:  # a modern front client: stop, answer input_required
            self.need = need
            self.scope.cancel()
            # The upstream gets an error for its request (the call is being cancelled).
            raise McpError(
                INTERNAL_ERROR, "the front client answers on a retry; this call is abandoned"
            ) from None
        except McpError as err:  # the front client cannot be asked: that is the answer
            self.failure = err
            self.scope.cancel()
            raise


class Fronts:
    """The front requests with an upstream call in flight (per proxy)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inflight: list[FrontCall] = []

    def enter(self, call: FrontCall) -> contextvars.Token[FrontCall | None]:
        self.inflight.append(call)
        return _current.set(call)

    def leave(self, call: FrontCall, token: contextvars.Token[FrontCall | None]) -> None:
        self.inflight.remove(call)
        _current.reset(token)

    def current(self) -> FrontCall:
        call = _current.get()
        if call is not None and call in self.inflight:
            return call
        if len(self.inflight) == 1:
            return self.inflight[0]
        raise McpError(
            INTERNAL_ERROR,
            f"upstream {self.name!r} asked for input while {len(self.inflight)} calls were in "
            "flight, and cannot tell which one it is for",
        )

    def callbacks(self) -> dict[str, Any]:
        """``Client(...)`` keyword arguments that route input requests to the front."""

        def bridge(what: str) -> Any:
            async def answer(params: dict[str, Any]) -> Any:
                return await self.current().ask(what, params)

            return answer

        async def roots() -> Any:
            return await self.current().ask("roots", {})

        return {
            "elicitation": bridge("elicit"),
            "url_elicitation": bridge("elicit_url"),
            "sampling": bridge("sample"),
            "roots": roots,
            "on_log": self.log,
        }

    async def log(self, params: dict[str, Any]) -> None:
        """An upstream log message goes to the front request it belongs to; one that
        belongs to none (or to one of several) goes to this process's log."""
        try:
            call = self.current()
        except McpError:
            log.info("upstream %s: %s", self.name, params.get("data"))
            return
        await call.ctx.log(
            str(params.get("level", "info")), params.get("data"), params.get("logger")
        )


def forwarded_meta(ctx: Context, *, capabilities: bool, tasks: bool = False) -> dict[str, Any]:
    """What of the front request's ``_meta`` travels upstream: the W3C trace context, the
    log level and (on a modern-to-modern pass-through) the front client's capabilities,
    so the upstream asks only for input the front client can give."""
    level = ctx.meta.log_level or (ctx.session.log_level if ctx.session is not None else None)
    return passed_meta(ctx.params.get("_meta"), ctx.meta, level, capabilities, tasks)


def passed_meta(
    front: object, request: RequestMeta, level: str | None, capabilities: bool, tasks: bool
) -> dict[str, Any]:
    """:func:`forwarded_meta` from the parsed request alone (no :class:`Context`)."""
    meta: dict[str, Any] = {}
    if isinstance(front, dict):
        meta.update({k: v for k in TRACE_KEYS if isinstance(v := front.get(k), str)})
    if level is not None:
        meta[META_LOG_LEVEL] = level
    if capabilities:
        # The tasks extension only where tasks/* are passed through to the same upstream.
        caps = dict(request.client_capabilities)
        if not tasks:
            caps.pop("extensions", None)
        meta[META_CLIENT_CAPABILITIES] = caps
    return meta


def progress_relay(ctx: Context) -> ProgressRelay | None:
    """Relay the upstream's progress to the front client (when it asked for progress)."""
    if ctx.meta.progress_token is None:
        return None

    async def forward(update: dict[str, Any]) -> None:
        progress = update.get("progress")
        if isinstance(progress, (int, float)):
            await ctx.report_progress(progress, update.get("total"), update.get("message"))

    return forward


#: How a bridged call reaches its upstream: ``call(fn, front, safe)`` runs ``fn(client)``.
UpstreamCall = Callable[[Any, "FrontCall", bool], Awaitable[dict[str, Any]]]


async def bridged_call(
    server: Server,
    ctx: Context,
    method: str,
    params: dict[str, Any],
    call: UpstreamCall,
    *,
    binding: str,
    safe: bool,
    finish: Callable[[dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    """A ``tools/call``, ``prompts/get`` or ``resources/read`` (``params`` as the upstream
    names its target) run through the upstream's client, its input requests asked of the
    front client: a legacy front gets real requests, a modern one ``input_required`` in
    MRTR rounds sealed with ``server``'s keys under ``binding`` (the retry replays the
    upstream call).  ``finish`` shapes the upstream's answer.  The proxy's way and the
    gateway's, one implementation."""
    progress = progress_relay(ctx)
    meta = forwarded_meta(ctx, capabilities=False) or None
    target = params.get("uri") if method == "resources/read" else params.get("name")

    async def once(c: Any) -> dict[str, Any]:
        if method == "tools/call":
            arguments = params.get("arguments")
            return dict(await c.call_tool(str(target), arguments, on_progress=progress, meta=meta))
        if method == "prompts/get":
            return dict(await c.get_prompt(str(target), params.get("arguments"), meta=meta))
        return dict(await c.read_resource(str(target), refresh=True, meta=meta))

    async def run() -> dict[str, Any]:
        front = FrontCall(ctx)
        result: dict[str, Any] | None = None
        try:
            with front.scope:
                result = finish(await call(once, front, safe))
        except Exception:
            # The front's own answer stopped the call: the client raised it where it asked
            # (the pages of a -32042 are shown from the calling task), not as cancelled.
            if front.failure is None and front.need is None:
                raise
        if front.failure is not None:
            raise front.failure
        if front.need is not None:
            raise front.need
        if result is None:  # cancelled for another reason
            raise McpError(INTERNAL_ERROR, f"the upstream call {method} {target} was cancelled")
        for page in front.pages:
            await page.complete()
        return result

    return await server_handlers.with_input(server, ctx, binding, run)
