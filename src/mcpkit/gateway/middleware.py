"""The gateway's one policy point: every routed request is named, checked and audited
here, in dispatch, whatever route brought it in.

In order, for each request (:class:`Policy`):

1. **named**: an MCP App's ``tools/call`` of its own unprefixed tool name is renamed to
   the gateway's name for it (:func:`resolve_app_name`); virtual servers and prefixes are
   the names themselves.  Every later step sees the name clients see.
2. **checked**: the transport compared the ``Mcp-*`` headers with the body before
   dispatch (400 / -32020); here a virtual server's allow-list and the first matching
   ``[[rule]]`` (:func:`check_access`), then ``[auth.tool_scopes]`` (:func:`check_scopes`,
   a 403 step-up challenge), then ``[[rate_limit]]`` (:func:`check_limits`, 429).  The
   guardrails run after, around the routing (:mod:`.server`).
3. **audited**: one audit line and one metrics sample, whatever the outcome
   (:func:`failed`, :func:`finish`).

A ``subscriptions/listen`` stream is held by the transport, not dispatched: its resource
subscriptions are decided by :func:`admit_listen`, with the same functions on each URI as
a ``resources/read`` of it, and audited the same way.

The layer wraps the gateway's routed methods only (lists, calls, reads, completions,
tasks and discovery), inside whatever middleware the operator adds (telemetry,
timing...), so a SERVER span covers a refused request too and parents the upstream's
CLIENT span.  A legacy session's own methods (``initialize``, ``ping``...) are not
policed.  It reads the gateway's current policy objects at call time
(``gateway.authorizer``, ``gateway.limiter``, ``gateway.audit``,
``gateway.authenticator``), so a config reload that swaps them takes effect on the next
request without rebuilding any chain.

Authentication is the one step before dispatch: it answers at the HTTP front (a 401 with
its ``WWW-Authenticate`` challenge, before the body is read, see :mod:`.app`) and hands
the caller to the dispatcher.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..compose.replicas import AnyUpstream
from ..server.middleware import CallNext, Middleware
from ..server.mrtr import NeedInput
from ..transports.http.asgi import Rejection
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
    "Policy",
    "PolicyError",
    "Record",
    "admit_listen",
    "check_access",
    "check_limits",
    "check_scopes",
    "failed",
    "finish",
    "policy",
    "resolve_app_name",
    "served_by",
]

#: The method a listen stream's subscriptions are audited under.
LISTEN = "subscriptions/listen"

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


#: The params member that names what each method acts on (a tool, a prompt, a URI).
_NAME_PARAMS = {method: spec.name_param for method, spec in METHODS.items() if spec.name_param}


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


async def resolve_app_name(gateway: GatewayServer, ctx: Context, name: str | None) -> str | None:
    """An MCP App calling its own tool by the name it has at its upstream (``roll``
    rather than ``dice_roll``): the call ``name`` is renamed to the gateway's name for it
    (in ``ctx.params``, and returned) before any check sees it, so policy is decided on
    the name clients see.

    The App's ``tools/call`` reaches the gateway as the host passes it on, with nothing
    naming the App, so the gateway tells by what it serves: a name no upstream offers
    under the front's names, which is a tool of exactly one upstream serving an App
    (a ``ui://`` view).  Two such upstreams are refused, naming both front names."""
    if name is None or name in gateway.tools:
        return name
    upstreams = gateway.upstreams
    found = await name_owner(upstreams, name)
    # Lists are read only for a name that fits no prefix (an error before), or when
    # several upstreams share the front unprefixed: never on the usual path.
    shared = len(upstreams) > 1 and any(not u.prefix for u in upstreams)
    if found is None or (shared and not await _lists(*found)):
        owners = await app_owners(upstreams, name)
        if len(owners) == 1:
            resolved = owners[0].prefix + name
            ctx.params = {**ctx.params, "name": resolved}
            return resolved
        if owners:
            choices = " or ".join(repr(u.prefix + name) for u in owners)
            raise invalid_params(
                f"Tool {name!r} belongs to the Apps of several upstreams "
                f"({', '.join(u.name for u in owners)}): call {choices}",
                {"name": name},
            )
    return name


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


def check_scopes(gateway: GatewayServer, who: Caller, method: str, name: str | None) -> None:
    """``[auth.tool_scopes]``: a request whose tool needs scopes the caller's token lacks
    is refused with a 403 ``insufficient_scope`` step-up challenge (``WWW-Authenticate``
    naming the scopes to ask for), decided on the resolved name."""
    authenticator = gateway.authenticator
    if authenticator is None:  # (no [auth.tool_scopes])
        return
    member = "name" if method == "tools/call" else "uri"
    try:
        authenticator.check_call(who, {"method": method, "params": {member: name}})
    except Rejection as refused:
        raise PolicyError(
            refused.error.code,
            refused.error.message,
            refused.status,
            "insufficient_scope",
            headers=refused.headers,
        ) from None


class Policy(Middleware):
    """The policy point, one layer around every routed method: named, checked, audited
    (see the module docstring).  One frame for all of it: a forwarded call resumes every
    frame between its transport and its upstream on each wake-up."""

    def __init__(self, gateway: GatewayServer) -> None:
        self.gateway = gateway

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        gateway = self.gateway
        method = ctx.method
        who = ctx.principal
        if who is None or not isinstance(who, Caller):
            who = ctx.principal = ANONYMOUS
        member = _NAME_PARAMS.get(method)
        name = ctx.params.get(member) if member is not None else None
        if type(name) is not str and not isinstance(name, str):
            name = None
        # Timed and recorded only when someone reads the audit line or the metrics.
        record = Record() if gateway.audit.enabled or gateway.metrics.enabled else None
        if record is not None:
            started = time.perf_counter()
            token = _record.set(record)
        outcome = "ok"
        try:
            if method == "tools/call" and name not in gateway.tools:
                name = await resolve_app_name(gateway, ctx, name)
            if who.view is not None or not gateway.authorizer.allows_all:
                check_access(gateway, who, method, name, ctx.params, record)
            if gateway.authenticator is not None:
                check_scopes(gateway, who, method, name)
            if gateway.limiter.rules:
                await check_limits(gateway, who, method, name)
            result = await call_next(ctx)
            if record is not None and result.get("resultType") == "input_required":
                outcome = "input_required"
            return result
        except BaseException as exc:
            outcome, error = failed(method, exc)
            if error is not None:
                raise error from exc
            raise
        finally:
            if record is not None:
                _record.reset(token)
                finish(gateway, method, who, name, record, outcome, started)


async def admit_listen(gateway: GatewayServer, who: object, uris: Iterable[str]) -> None:
    """A ``subscriptions/listen`` stream's resource subscriptions, each decided and
    audited as a ``resources/read`` of its URI would be (:func:`check_access`,
    :func:`check_scopes`), under the method ``subscriptions/listen``.  The first URI
    refused refuses the listen."""
    caller = who if isinstance(who, Caller) else ANONYMOUS
    for uri in uris:
        started = time.perf_counter()
        record = Record()
        outcome = "ok"
        try:
            params = {"uri": uri}
            check_access(gateway, caller, "resources/read", uri, params, record)
            check_scopes(gateway, caller, "resources/read", uri)
        except PolicyError as refused:
            outcome = refused.outcome
            raise
        finally:
            finish(gateway, LISTEN, caller, uri, record, outcome, started)


def policy(gateway: GatewayServer) -> list[Middleware]:
    """The gateway's layers, outermost first: the one policy point."""
    return [Policy(gateway)]
