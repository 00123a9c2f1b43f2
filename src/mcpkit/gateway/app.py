"""The gateway as one ASGI application: ``/mcp`` (both eras), ``/metrics``, ``/healthz``.

Before the body is read, the fast path uses ``Mcp-Method``/``Mcp-Name`` (2026-07-28
clients send them) to refuse early: unauthenticated (401), not allowed (403) or already
over a rate limit (429).  Nothing is *counted* here: the request is counted once, in the
dispatcher, under the name from the body after the transport checked the headers against
it, so a spoofed ``Mcp-Name`` is rejected (400/-32020) instead of being charged to
another tool.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..protocol.headers import METHOD, NAME, decode_header_value
from ..transports.http.app import HttpOptions, McpHttpApp
from ..transports.http.asgi import (
    Receive,
    Rejection,
    Scope,
    Send,
    header_map,
    send_bytes,
    send_error,
    send_json,
)
from ..types.errors import McpError
from .auth import GatewayAuthenticator
from .config import GatewayConfig
from .policy import Principal
from .server import FORBIDDEN, RATE_LIMITED, GatewayServer

_PRINCIPAL = "mcpkit.gateway.principal"


class GatewayApp:
    def __init__(self, config: GatewayConfig, options: HttpOptions | None = None) -> None:
        self.config = config
        self.server = GatewayServer(config)
        self.authenticator = GatewayAuthenticator(config.auth, config.base_dir)
        self.mcp = McpHttpApp(self.server, options, authenticate=self._authenticate)
        self.path = self.mcp.options.path

    async def _authenticate(self, scope: Scope, headers: dict[str, str]) -> Principal:
        cached = scope.get(_PRINCIPAL)
        if isinstance(cached, Principal):
            return cached
        principal = await self.authenticator(scope, headers)
        scope[_PRINCIPAL] = principal
        return principal

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.mcp.lifespan_context():
            await self.server.start_upstreams()
            yield

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        cm = self.running()
        try:
            await cm.__aenter__()
        except Exception as exc:
            await send({"type": "lifespan.startup.failed", "message": repr(exc)})
            return
        await send({"type": "lifespan.startup.complete"})
        message = await receive()
        await cm.__aexit__(None, None, None)
        await send({"type": "lifespan.shutdown.complete"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        if path == "/metrics":
            body, content_type = self.server.metrics.render()
            await send_bytes(send, 200, body, [(b"content-type", content_type.encode())])
            return
        if path == "/healthz":
            states = {
                u.name: ("up" if u.client else f"down: {u.error}") for u in self.server.upstreams
            }
            healthy = all(u.client is not None for u in self.server.upstreams)
            await send_json(send, 200 if healthy else 503, {"upstreams": states})
            return
        if scope.get("method") == "POST" and path.rstrip("/") == self.path:
            headers = header_map(scope)
            method = headers.get(METHOD)
            if method is not None:
                try:
                    principal = await self._authenticate(scope, headers)
                    await self._precheck(principal, method, headers.get(NAME))
                except Rejection as rejection:
                    await send_error(
                        send, rejection.status, rejection.error, None, rejection.headers
                    )
                    return
        await self.mcp(scope, receive, send)

    async def _precheck(self, principal: Principal, method: str, raw_name: str | None) -> None:
        try:
            name = decode_header_value(raw_name) if raw_name is not None else None
        except ValueError:
            return  # malformed: the transport rejects it with -32020 once the body is read
        allowed, reason = self.server.authorizer.decide(principal, method, name)
        if not allowed:
            raise Rejection(
                403,
                McpError(
                    FORBIDDEN, f"Forbidden: {method} {name or ''} ({reason})".replace("  ", " ")
                ),
            )
        limiter = self.server.limiter
        for rule, item in limiter.applicable(method, name):
            identity = (
                rule.name,
                method,
                name or "",
                principal.name if rule.per == "principal" else "*",
            )
            strategy = limiter._strategy()
            if not await strategy.test(item, *identity):
                verdict = await limiter._refusal(strategy, rule, item, identity)
                raise Rejection(
                    429,
                    McpError(
                        RATE_LIMITED,
                        f"Rate limit exceeded: rule {rule.name!r} ({rule.limit})",
                        {
                            "rule": rule.name,
                            "limit": rule.limit,
                            "retryAfter": verdict.retry_after_s,
                        },
                    ),
                    [(b"retry-after", str(verdict.retry_after_s).encode())],
                )


def create_gateway(config: GatewayConfig, options: HttpOptions | None = None) -> Any:
    return GatewayApp(config, options)
