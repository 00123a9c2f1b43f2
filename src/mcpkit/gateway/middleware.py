"""The gateway's policy as :class:`~mcpkit.server.Middleware`: audit and metrics, then
authorization (virtual servers and ``[[rule]]``), then ``[[rate_limit]]``, around the
routing to upstreams.

They wrap the gateway's routed methods only (lists, calls, reads, completions, tasks and
discovery), inside whatever middleware the operator adds (telemetry, timing...), so a
SERVER span covers a refused request too and parents the upstream's CLIENT span.  A
legacy session's own methods (``initialize``, ``ping``...) are not policed, as before.

Each reads the gateway's current policy objects at call time (``gateway.authorizer``,
``gateway.limiter``, ``gateway.audit``), so a config reload that swaps them takes effect
on the next request without rebuilding any chain.

Authentication is not here: it answers at the HTTP front (a 401 with its
``WWW-Authenticate`` challenge, before any MCP message is read, see :mod:`.app`) and
hands the principal to the dispatcher.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..compose.replicas import AnyUpstream
from ..server.middleware import CallNext, Middleware
from ..server.mrtr import NeedInput
from ..types.errors import INTERNAL_ERROR, McpError, invalid_params
from ..types.methods import METHODS
from . import views
from .policy import ANONYMOUS, Caller
from .routing import app_owners, name_owner

if TYPE_CHECKING:
    from ..server.context import Context
    from .server import GatewayServer

__all__ = [
    "FORBIDDEN",
    "RATE_LIMITED",
    "UNAUTHENTICATED",
    "PolicyError",
    "Record",
    "audited",
    "check_access",
    "check_limits",
    "failed",
    "finish",
    "policy",
    "served_by",
]

log = logging.getLogger("mcpkit.gateway")

#: Application error codes (outside the JSON-RPC/MCP reserved range).
UNAUTHENTICATED = -31001
FORBIDDEN = -31003
RATE_LIMITED = -31029


class PolicyError(McpError):
    """A request the gateway's policy refused; ``outcome`` is its audit outcome."""

    def __init__(
        self,
        code: int,
        message: str,
        status: int,
        outcome: str,
        data: object = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(code, message, data, http_status=status, http_headers=headers)
        self.outcome = outcome


@dataclass(slots=True)
class Record:
    """What the inner layers learn for the audit line: the deciding rule, the upstream."""

    upstream: str | None = None
    rule: str | None = None


_record: contextvars.ContextVar[Record | None] = contextvars.ContextVar(
    "mcpkit_gateway_record", default=None
)


def served_by(upstream: str | None) -> None:
    """Name the upstream that served the current request (for its audit line)."""
    record = _record.get()
    if record is not None:
        record.upstream = upstream


def _who(ctx: Context) -> Caller:
    return ctx.principal if isinstance(ctx.principal, Caller) else ANONYMOUS


def _name(ctx: Context) -> str | None:
    spec = METHODS.get(ctx.method)
    name = ctx.params.get(spec.name_param) if spec and spec.name_param else None
    return name if isinstance(name, str) else None


async def audited(
    gateway: GatewayServer,
    method: str,
    who: Callable[[], Caller],
    name: Callable[[], str | None],
    call: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """Run one request's policy and routing (``call``) and write its audit line and
    metrics sample, whatever the outcome; an unexpected exception becomes -32603
    "Gateway error" (logged with its traceback).  ``who`` and ``name`` are read at the
    end, after the inner layers settled them.  The :class:`Audit` layer's; the direct
    path (:mod:`.direct`), which has no inner layers to hear from, does the same in its
    own frame with the same parts (:func:`failed`, :func:`finish`)."""
    started = time.perf_counter()
    record = Record()
    token = _record.set(record)
    outcome = "ok"
    try:
        result = await call()
        if result.get("resultType") == "input_required":
            outcome = "input_required"
        return result
    except BaseException as exc:
        outcome, error = failed(method, exc)
        if error is not None:
            raise error from exc
        raise
    finally:
        _record.reset(token)
        finish(gateway, method, who(), name(), record, outcome, started)


def failed(method: str, exc: BaseException) -> tuple[str, McpError | None]:
    """The audit outcome of a request that raised ``exc``, and the error to answer
    instead when it is not one of the gateway's own (logged with its traceback: call
    this in the ``except`` block)."""
    if isinstance(exc, PolicyError):
        return exc.outcome, None
    if isinstance(exc, McpError):
        return getattr(exc, "outcome", f"error:{exc.code}"), None  # guardrail:<name>
    if isinstance(exc, NeedInput):
        return "input_required", None
    if isinstance(exc, Exception):
        log.exception("gateway error on %s", method)
        return f"error:{INTERNAL_ERROR}", McpError(
            INTERNAL_ERROR, f"Gateway error: {type(exc).__name__}"
        )
    # The request's task or scope was cancelled (the client went away, the gateway is
    # stopping): no answer went out, so the line must not say "ok".
    return "cancelled", None


def finish(
    gateway: GatewayServer,
    method: str,
    who: Caller,
    name: str | None,
    record: Record,
    outcome: str,
    started: float,
) -> None:
    """Write a request's audit line and metrics sample (``started``: its
    ``perf_counter``)."""
    seconds = time.perf_counter() - started
    audit = gateway.audit
    if audit.enabled:
        extra = {"rule": record.rule} if record.rule is not None else {}
        audit.record(
            principal=who.name,
            method=method,
            name=name,
            upstream=record.upstream,
            outcome=outcome,
            latency_ms=seconds * 1000,
            **extra,
        )
    gateway.metrics.observe(method, record.upstream, outcome, seconds)


class Audit(Middleware):
    """One audit line and one metrics sample per request (:func:`audited`)."""

    def __init__(self, gateway: GatewayServer) -> None:
        self.gateway = gateway

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        return await audited(
            self.gateway,
            ctx.method,
            lambda: _who(ctx),
            lambda: _name(ctx),
            lambda: call_next(ctx),
        )


class AppNames(Middleware):
    """An MCP App calling its own tool by the name it has at its upstream (``roll``
    rather than ``dice_roll``): the call is renamed to the gateway's name for it before
    any rule or limit sees it, so policy is decided on the name clients see.

    The App's ``tools/call`` reaches the gateway as the host passes it on, with nothing
    naming the App, so the gateway tells by what it serves: a name no upstream offers
    under the front's names, which is a tool of exactly one upstream serving an App
    (a ``ui://`` view).  Two such upstreams are refused, naming both front names."""

    def __init__(self, gateway: GatewayServer) -> None:
        self.gateway = gateway

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        name = ctx.params.get("name")
        gateway = self.gateway
        if isinstance(name, str) and name not in gateway.tools:
            upstreams = gateway.upstreams
            found = await name_owner(upstreams, name)
            # Lists are read only for a name that fits no prefix (an error before), or
            # when several upstreams share the front unprefixed: never on the usual path.
            shared = len(upstreams) > 1 and any(not u.prefix for u in upstreams)
            if found is None or (shared and not await _lists(*found)):
                owners = await app_owners(upstreams, name)
                if len(owners) == 1:
                    ctx.params = {**ctx.params, "name": owners[0].prefix + name}
                elif owners:
                    choices = " or ".join(repr(u.prefix + name) for u in owners)
                    raise invalid_params(
                        f"Tool {name!r} belongs to the Apps of several upstreams "
                        f"({', '.join(u.name for u in owners)}): call {choices}",
                        {"name": name},
                    )
        return await call_next(ctx)


async def _lists(upstream: AnyUpstream, name: str) -> bool:
    try:
        return any(t.get("name") == name for t in await upstream.listing("tools"))
    except McpError:
        return False


def check_access(
    gateway: GatewayServer,
    who: Caller,
    method: str,
    name: str | None,
    params: dict[str, Any],
    record: Record | None = None,
) -> None:
    """A virtual server's allow-list, then the first matching ``[[rule]]`` (its CEL
    conditions see the token's claims and the call's arguments); the deciding rule goes
    to the audit line (``record``, else the current request's).  Raises the refusal."""
    view = gateway.config.view(who.view) if who.view is not None else None
    if view is not None and not views.allows(view, method, params):
        raise invalid_params(f"Unknown name: {name}", {"name": name})  # not here
    authorizer = gateway.authorizer
    if not authorizer.rules:  # (no [[rule]]: default_effect, every call)
        decision = authorizer.default
    else:
        arguments = params.get("arguments") if method in ("tools/call", "prompts/get") else None
        decision = authorizer.decide(
            who, method, name, arguments if isinstance(arguments, dict) else {}
        )
    if record is None:
        record = _record.get()
    if record is not None:
        record.rule = decision.rule
    if not decision.allowed:
        raise PolicyError(
            FORBIDDEN,
            f"Forbidden: {method}{' ' + name if name else ''} "
            f"is not allowed for {who.name} ({decision.reason})",
            403,
            decision.outcome,
        )


async def check_limits(gateway: GatewayServer, who: Caller, method: str, name: str | None) -> None:
    """Count the request against ``[[rate_limit]]``; raises the refusal (429)."""
    limiter = gateway.limiter
    if not limiter.rules:  # (no [[rate_limit]]: nothing to count, every call)
        return
    verdict = await limiter.check(who.name, method, name)
    if not verdict.allowed:
        raise PolicyError(
            RATE_LIMITED,
            f"Rate limit exceeded: rule {verdict.rule!r} ({verdict.limit})",
            429,
            f"rate_limited:{verdict.rule}",
            {"rule": verdict.rule, "limit": verdict.limit, "retryAfter": verdict.retry_after_s},
            [(b"retry-after", str(verdict.retry_after_s).encode())],
        )


class Access(Middleware):
    """:func:`check_access` on every routed request."""

    def __init__(self, gateway: GatewayServer) -> None:
        self.gateway = gateway

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        who = ctx.principal = _who(ctx)
        check_access(self.gateway, who, ctx.method, _name(ctx), ctx.params)
        return await call_next(ctx)


class Limits(Middleware):
    """``[[rate_limit]]``: counted under the name from the body (the transport checked
    it against ``Mcp-Name`` before), per principal or shared, in the state backend."""

    def __init__(self, gateway: GatewayServer) -> None:
        self.gateway = gateway

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if self.gateway.limiter.rules:
            await check_limits(self.gateway, _who(ctx), ctx.method, _name(ctx))
        return await call_next(ctx)


def policy(gateway: GatewayServer) -> list[Middleware]:
    """The gateway's layers, outermost first."""
    return [Audit(gateway), AppNames(gateway), Access(gateway), Limits(gateway)]
