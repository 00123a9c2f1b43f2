"""The gateway as one ASGI application: ``/mcp`` (both eras), ``/metrics``, the probes
(``/livez``, ``/readyz``, ``/healthz``: :mod:`.front`) and, in ``jwt`` mode, the RFC 9728
metadata at ``/.well-known/oauth-protected-resource[/path]`` (served by
:class:`mcpkit.auth.ProtectedResource`, the same code as any protected mcpkit server).

Before the body is read, the fast path uses ``Mcp-Method``/``Mcp-Name`` (2026-07-28
clients send them) to refuse early: unauthenticated (401), not allowed (403) or already
over a rate limit (429).  Nothing is *counted* here: the request is counted once, in the
dispatcher, under the name from the body after the transport checked the headers against
it, so a spoofed ``Mcp-Name`` is rejected (400/-32020) instead of being charged to
another tool.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from ..auth.resource_server import ProtectedResource, replay_body
from ..protocol.headers import METHOD, NAME, decode_header_value
from ..state.base import StateUnavailable
from ..transports.http import asgi
from ..transports.http.app import HttpOptions, McpHttpApp
from ..transports.http.asgi import Receive, Scope, Send
from ..types.codec import decode
from ..types.errors import INVALID_REQUEST, McpError
from ..types.methods import METHODS
from .auth import GatewayAuthenticator
from .config import GatewayConfig
from .direct import DirectCalls
from .front import OPERATIONS, Cors, operations
from .middleware import FORBIDDEN, RATE_LIMITED
from .policy import ANONYMOUS, Caller
from .reload import run_reloader
from .server import GatewayServer

_PRINCIPAL = "mcpkit.gateway.principal"


class GatewayApp:
    """``config_path`` turns on live reload (SIGHUP; with ``watch``, file changes too)."""

    def __init__(
        self,
        config: GatewayConfig,
        options: HttpOptions | None = None,
        *,
        config_path: str | Path | None = None,
        watch: bool = False,
    ) -> None:
        self.server = GatewayServer(config)
        self.mcp = McpHttpApp(self.server, options, authenticate=self._authenticate)
        self.path = self.mcp.options.path
        self._base_policy = self.mcp.options.host_policy
        #: ``[[server]]`` path -> (its name, an endpoint on the same GatewayServer).
        self.views: dict[str, tuple[str, McpHttpApp]] = {}
        for view in config.servers:
            if view.path == self.path:
                raise ValueError(f"[[server]] {view.name}: path {view.path} is the main endpoint")
            own = dataclasses.replace(self.mcp.options, path=view.path)
            endpoint = McpHttpApp(self.server, own, authenticate=self._authenticate)
            self.views[view.path] = (view.name, endpoint)
        self.config_path = config_path
        self.watch = watch
        self.direct = DirectCalls(self)
        self.install(config, GatewayAuthenticator(config.auth, config.base_dir))

    def install(self, config: GatewayConfig, authenticator: GatewayAuthenticator) -> None:
        """The front's share of a config (at start and on a reload): auth, the RFC 9728
        metadata, CORS.  Synchronous, so a reload swaps it with the rest in one step."""
        self.config = config
        self.authenticator = authenticator
        #: No auth configured: every POST is the anonymous caller's, known without a call.
        self._anonymous = config.auth.mode == "none"
        bearer = authenticator.bearer
        #: Only its metadata endpoint is used: authentication is done in __call__, where
        #: refusals are also audited and counted.
        self.metadata = ProtectedResource(self.mcp, bearer) if bearer is not None else None
        self.cors = Cors(config.cors_origins) if config.cors_origins else None
        policy = self._base_policy
        if config.cors_origins:  # a CORS origin is by definition an accepted Origin
            origins = {o.rstrip("/").lower() for o in config.cors_origins}
            policy = dataclasses.replace(policy, allowed_origins=policy.allowed_origins | origins)
        self.mcp.options.host_policy = policy
        for _, endpoint in self.views.values():
            endpoint.options.host_policy = policy

    async def _authenticate(self, scope: Scope, headers: dict[str, str]) -> Caller:
        cached = scope.get(_PRINCIPAL)
        if isinstance(cached, Caller):
            return cached
        started = time.perf_counter()
        try:
            principal = await self.authenticator(scope, headers)
        except asgi.Rejection:
            # Only GET/DELETE (legacy streams) get here unauthenticated: POSTs were
            # authenticated, and their refusals recorded, in __call__.
            self._record(None, f"HTTP {scope.get('method', '?')}", None, "unauthenticated", started)
            raise
        principal = self._in_view(principal, scope)
        scope[_PRINCIPAL] = principal
        return principal

    def _endpoint(self, path: str) -> tuple[str | None, McpHttpApp]:
        views = self.views
        if not views:  # (the usual gateway: no [[server]])
            return None, self.mcp
        found = views.get(path) or views.get(path.rstrip("/"))
        return found if found is not None else (None, self.mcp)

    def _in_view(self, principal: Caller, scope: Scope) -> Caller:
        """The principal, marked with the virtual server its request came in on."""
        if not self.views:
            return principal
        view, _ = self._endpoint(scope.get("path", ""))
        return principal if view is None else dataclasses.replace(principal, view=view)

    def _record(
        self,
        principal: Caller | None,
        method: str | None,
        name: str | None,
        outcome: str,
        started: float,
        rule: str | None = None,
    ) -> None:
        """Audit and count a request refused before it reached the dispatcher (``rule``:
        the policy rule that refused it)."""
        seconds = time.perf_counter() - started
        server = self.server
        who = principal.name if principal is not None else None
        extra = {"rule": rule} if rule is not None else {}
        server.audit.record(
            principal=who,
            method=method,
            name=name,
            upstream=None,
            outcome=outcome,
            latency_ms=seconds * 1000,
            **extra,
        )
        server.metrics.observe(method or "-", None, outcome, seconds)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the gateway's lifespan (upstream connections, health checks, virtual servers)
        for the duration of the block, without an ASGI server's lifespan events."""
        async with self.mcp.lifespan_context(), contextlib.AsyncExitStack() as endpoints:
            for _, endpoint in self.views.values():  # (the server's lifespan is shared)
                await endpoints.enter_async_context(endpoint.lifespan_context())
            await self.server.start_upstreams()
            try:
                async with anyio.create_task_group() as tg:
                    if self.config_path is not None:
                        run_reloader(self, self.config_path, watch=self.watch, tg=tg)
                    try:
                        yield
                    finally:
                        tg.cancel_scope.cancel()
            finally:
                await self.server.stop_upstreams()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await asgi.serve_lifespan(self.running(), receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        if path in OPERATIONS:
            await operations(path, scope, self.mcp.options.host_policy, self.server, send)
            return
        if self.metadata is not None and path in self.metadata.auth.metadata_paths:
            await self.metadata(scope, receive, send)
            return
        headers = asgi.header_map(scope)
        if self.cors is not None:
            origin = self.cors.origin(headers)
            if origin is not None:
                if scope.get("method") == "OPTIONS":
                    await self.cors.preflight(origin, headers, send)
                    return
                send = self.cors.wrap(origin, send)
        endpoint = self._endpoint(path)[1] if self.views else self.mcp
        policy = endpoint.options.host_policy
        if (
            scope.get("method") == "POST"
            and path.rstrip("/") == endpoint.options.path
            and policy.host_ok(headers.get("host"))
            and policy.origin_ok(headers.get("origin"))
        ):  # (a bad Host or Origin is the transport's 403, before any token is looked at)
            method = headers.get(METHOD)
            name = _header_name(headers.get(NAME))
            started = time.perf_counter()
            if self._anonymous:
                principal = ANONYMOUS
            else:
                try:
                    principal = await self.authenticator(scope, headers)
                except asgi.Rejection as rejection:
                    if method is None:  # a legacy client: what it asked for is in the body
                        method, name = await self._peek(receive)
                    self._record(None, method, name, "unauthenticated", started)
                    await asgi.send_error(
                        send, rejection.status, rejection.error, None, rejection.headers
                    )
                    return
            if self.views:
                principal = self._in_view(principal, scope)
            scope[_PRINCIPAL] = principal
            if self.authenticator.has_call_scopes:
                try:
                    receive, method, name = await self._check_scopes(principal, receive)
                except _BodyGone:
                    return
                except asgi.Rejection as rejection:
                    outcome = "insufficient_scope" if rejection.status == 403 else "too_large"
                    self._record(principal, method, name, outcome, started)
                    await asgi.send_error(
                        send, rejection.status, rejection.error, None, rejection.headers
                    )
                    return
            if method is not None:
                try:
                    self._precheck(principal, method, name)
                    if self.server.limiter.rules:
                        await self._prelimit(principal, method, name)
                except _Refused as refused:
                    self._record(principal, method, name, refused.outcome, started, refused.rule)
                    await asgi.send_error(
                        send, refused.status, refused.error, None, refused.headers
                    )
                    return
                if method == "tools/call" and name is not None and endpoint is self.mcp:
                    replay = await self.direct.serve(receive, send, headers, principal, name)
                    if replay is None:
                        return  # answered by the direct path
                    receive = replay
        await endpoint(scope, receive, send)

    async def _check_scopes(
        self, principal: Caller, receive: Receive
    ) -> tuple[Receive, str | None, str | None]:
        """Read the body once to find the tool it calls and refuse with a 403 step-up
        challenge when the token lacks that tool's scopes; then replay the body.  Only
        done when ``[auth.tool_scopes]`` is configured (it costs a body copy)."""
        limit = self.mcp.options.max_body_bytes
        try:
            body = await asgi.read_body(receive, limit, None)
        except asgi.BodyTooLarge:  # the same answer the transport gives
            raise asgi.Rejection(
                413, McpError(INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes")
            ) from None
        except asgi.ClientGone:
            raise _BodyGone from None
        try:
            message: Any = decode(body)
        except Exception:
            message = None  # the transport answers the parse error
        method, name = _method_name(message)
        self.authenticator.check_call(principal, message)
        return replay_body(body, receive), method, name

    async def _peek(self, receive: Receive) -> tuple[str | None, str | None]:
        """Method and name of a refused request's body, for the audit log (best effort)."""
        try:
            body = await asgi.read_body(receive, self.mcp.options.max_body_bytes, None)
            message = decode(body)
        except Exception:
            return None, None
        return _method_name(message)

    def _precheck(self, principal: Caller, method: str, name: str | None) -> None:
        """Refuse early on what the headers say (the transport checks them against the
        body afterwards; the dispatcher then decides and counts on the body's values);
        :meth:`_prelimit` then, when there are ``[[rate_limit]]`` rules."""
        authorizer = self.server.authorizer
        decision = (
            authorizer.decide(principal, method, name) if authorizer.rules else authorizer.default
        )
        if not decision.allowed:
            message = f"Forbidden: {method} {name or ''} ({decision.reason})".replace("  ", " ")
            raise _Refused(
                403, McpError(FORBIDDEN, message), outcome=decision.outcome, rule=decision.rule
            )

    async def _prelimit(self, principal: Caller, method: str, name: str | None) -> None:
        """Refuse early when the headers' call is already over a rate limit (429)."""
        try:
            verdict = await self.server.limiter.check(principal.name, method, name, charge=False)
        except StateUnavailable:
            return  # the dispatcher answers it, with the request's id, and audits it
        if not verdict.allowed:
            retry = verdict.retry_after_s
            raise _Refused(
                429,
                McpError(
                    RATE_LIMITED,
                    f"Rate limit exceeded: rule {verdict.rule!r} ({verdict.limit})",
                    {"rule": verdict.rule, "limit": verdict.limit, "retryAfter": retry},
                ),
                [(b"retry-after", str(retry).encode())],
                outcome=f"rate_limited:{verdict.rule}",
            )


def _method_name(message: object) -> tuple[str | None, str | None]:
    """The method and tool/prompt name or URI of one JSON-RPC request body."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None, None
    method: str = message["method"]
    params = message.get("params")
    spec = METHODS.get(method)
    name = None
    if isinstance(params, dict) and spec is not None and spec.name_param:
        value = params.get(spec.name_param)
        name = value if isinstance(value, str) else None
    return method, name


class _BodyGone(Exception):
    """The client went away while the body was read for a scope check."""


class _Refused(asgi.Rejection):
    """A fast-path refusal, with the outcome the audit log records for it."""

    def __init__(
        self,
        status: int,
        error: McpError,
        headers: list[tuple[bytes, bytes]] | None = None,
        *,
        outcome: str,
        rule: str | None = None,
    ) -> None:
        super().__init__(status, error, headers)
        self.outcome = outcome
        self.rule = rule


def _header_name(raw: str | None) -> str | None:
    if raw is None:
        return None
    try:
        return decode_header_value(raw)
    except ValueError:
        return None  # malformed: the transport rejects it with -32020 once the body is read
