"""The gateway as one ASGI application: ``/mcp`` (both eras), ``/metrics``, the probes
(``/livez``, ``/readyz``, ``/healthz``: :mod:`.front`), the ``/connect`` pages of
``per_user`` upstreams (:mod:`.connect_pages`) and, in ``jwt`` and
``authorization_server`` modes, the RFC 9728 metadata at
``/.well-known/oauth-protected-resource[/path]`` (served by
:class:`mcpkit.auth.ProtectedResource`, the same code as any protected mcpkit server); in
``authorization_server`` mode also the authorization server's endpoints
(:meth:`mcpkit.auth.server.AuthorizationServer.handle`: its metadata, ``/register``,
``/authorize``, ``/consent``, ``/oauth/callback``, ``/token``, ``/revoke``, ``/jwks.json``).

Authentication is the one check made here, before the body is read: a POST without
valid credentials gets its 401 and ``WWW-Authenticate`` challenge (audited), and the
caller it names is handed to the endpoint.  Everything else is decided once, in
dispatch, by the gateway's policy point (:mod:`.middleware`): after the transport checked
the ``Mcp-*`` headers against the body, after an App's name was resolved, before any
forwarding, so no route into the gateway can skip a check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from ..auth.resource_server import ProtectedResource
from ..protocol.headers import METHOD, NAME, decode_header_value
from ..transports.http import asgi
from ..transports.http.app import HttpOptions, McpHttpApp, read_post_body
from ..transports.http.asgi import Receive, Scope, Send
from ..types.codec import decode
from ..types.methods import METHODS
from .auth import GatewayAuthenticator
from .config import GatewayConfig
from .connect import ConnectFlows
from .connect_pages import is_connect_path, serve_connect
from .front import OPERATIONS, Cors, operations
from .policy import Caller
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
        #: Sign-ins in progress on the ``/connect`` pages (``per_user`` upstreams).
        self.connect_flows = ConnectFlows(self.server)
        self.install(config, GatewayAuthenticator(config.auth, config.base_dir))

    def install(self, config: GatewayConfig, authenticator: GatewayAuthenticator) -> None:
        """The front's share of a config (at start and on a reload): auth, the RFC 9728
        metadata, CORS.  Synchronous, so a reload swaps it with the rest in one step.
        The running authorization server (``authorization_server`` mode) is kept when its
        settings did not change: its clients, grants and keys, users signed in."""
        previous: GatewayAuthenticator | None = getattr(self, "authenticator", None)
        if previous is not None:
            authenticator.keep_authorization_server(previous)
        self.config = config
        self.authenticator = authenticator
        # Its tool scopes are checked at the policy point (none configured: nothing to ask).
        self.server.authenticator = authenticator if authenticator.has_call_scopes else None
        #: No auth configured: every POST is the anonymous caller's, known without a call.
        self._anonymous = config.auth.mode == "none"
        # ...and without virtual servers the endpoint needs no principal at all (dispatch
        # takes a request without one as the anonymous caller's).
        hook = None if self._anonymous and not self.views else self._authenticate
        for endpoint in (self.mcp, *(e for _, e in self.views.values())):
            endpoint.authenticate = hook
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
                    self.connect_flows.tg = tg
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
        authz = self.authenticator.authorization_server
        if authz is not None and await authz.handle(scope, receive, send):
            return  # (its own endpoints: metadata, registration, sign-in, tokens)
        if self.metadata is not None and path in self.metadata.auth.metadata_paths:
            await self.metadata(scope, receive, send)
            return
        if is_connect_path(path):
            await serve_connect(self, scope, receive, send)
            return
        headers = self.mcp.read_headers(scope)
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
            not self._anonymous
            and scope.get("method") == "POST"
            and path.rstrip("/") == endpoint.options.path
            and policy.host_ok(headers.get("host"))
            and policy.origin_ok(headers.get("origin"))
        ):  # (a bad Host or Origin is the transport's 403, before any token is looked at)
            try:
                principal = await self.authenticator(scope, headers)
            except asgi.Rejection as rejection:
                await self._unauthenticated(rejection, headers, receive, send)
                return
            scope[_PRINCIPAL] = self._in_view(principal, scope)
        await endpoint.serve(scope, receive, send, headers)

    async def _unauthenticated(
        self, rejection: asgi.Rejection, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        """Answer a POST without valid credentials: 401 with its ``WWW-Authenticate``
        challenge, audited under what the request asked for.  A 2026-07-28 request says so
        in its headers and is answered before its body is read; a legacy one's body is
        read for it, within the transport's size limit and body timeout (413, 408)."""
        started = time.perf_counter()
        method = headers.get(METHOD)
        name = _header_name(headers.get(NAME))
        if method is None:
            body = await read_post_body(self.mcp.options, headers, receive, send)
            if body is None:
                return  # refused (413, 408) or gone
            method, name = _method_name(body)
        self._record(None, method, name, "unauthenticated", started)
        await asgi.send_error(send, rejection.status, rejection.error, None, rejection.headers)


def _method_name(body: bytes) -> tuple[str | None, str | None]:
    """The method and tool/prompt name or URI of one JSON-RPC request body (best effort:
    None for what cannot be read)."""
    try:
        message: Any = decode(body)
    except Exception:
        return None, None
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


def _header_name(raw: str | None) -> str | None:
    if raw is None:
        return None
    try:
        return decode_header_value(raw)
    except ValueError:
        return None  # malformed: audited without a name
