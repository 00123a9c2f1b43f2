"""The MCP server as an OAuth 2.1 resource server (HTTP transport).

``BearerAuth`` holds the policy (verifier, canonical resource URI, authorization servers,
scopes); ``ProtectedResource`` is an ASGI wrapper that

* serves the RFC 9728 Protected Resource Metadata at
  ``/.well-known/oauth-protected-resource{path}`` (and, unless told not to, at the root
  well-known path);
* authenticates every request to the protected app: no or non-Bearer credentials -> 401
  with ``WWW-Authenticate: Bearer resource_metadata="...", scope="..."``; a bad, expired or
  foreign token -> 401 ``error="invalid_token"``; a malformed header -> 400
  ``invalid_request``; missing scopes -> 403 ``error="insufficient_scope"`` (step-up);
* checks per-call scopes (``tool_scopes`` for ``tools/call``, ``method_scopes`` for any
  method) from the JSON-RPC body, which it reads once (bounded) and replays to the app;
* removes the ``Authorization`` header before the app sees the request, so nothing behind it
  can forward the token (no passthrough), and hands the app the verified
  :class:`~mcpkit.auth.principal.Principal` through the ASGI scope.

Usage::

    auth = BearerAuth(JwtVerifier(issuer=ISS, audience=URL), resource=URL,
                      authorization_servers=[ISS], required_scopes=["mcp"],
                      tool_scopes={"delete_repo": ["repo:admin"]})
    app = McpHttpApp(server, auth=auth)  # the HTTP app wraps itself, ready for uvicorn

The HTTP app takes the policy (``McpHttpApp(auth=...)``), not the other way round: this
package imports only ``types``, so every layer above may use it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..asgi import BodyTooLarge, ClientGone, read_chunks
from ..types.codec import DecodeError, decode, encode
from .challenge import format_challenge
from .principal import Principal
from .urls import well_known_url
from .verifiers import InvalidToken, TokenVerifier

__all__ = [
    "PRINCIPAL_SCOPE_KEY",
    "AuthFailure",
    "BearerAuth",
    "ProtectedResource",
    "replay_body",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PRINCIPAL_SCOPE_KEY = "mcpkit.principal"
_TOKEN68 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=")


class AuthFailure(Exception):
    """An authentication or authorization refusal, with its HTTP shape."""

    def __init__(
        self,
        status: int,
        error: str | None,
        description: str,
        scopes: Sequence[str] | None = None,
    ) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.scopes = list(scopes) if scopes else None


class BearerAuth:
    """Resource-server policy: who may call, and with which scopes."""

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        required_scopes: Iterable[str] = (),
        scopes_supported: Sequence[str] | None = None,
        tool_scopes: Mapping[str, Iterable[str]] | None = None,
        method_scopes: Mapping[str, Iterable[str]] | None = None,
        resource_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        serve_root_metadata: bool = True,
    ) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise ValueError(
                f"resource must be an absolute http(s) URI without fragment: {resource}"
            )
        if not authorization_servers:
            raise ValueError("at least one authorization server is required (RFC 9728)")
        self.verifier = verifier
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        self.required_scopes = list(dict.fromkeys(required_scopes))
        self.tool_scopes = {k: list(v) for k, v in (tool_scopes or {}).items()}
        self.method_scopes = {k: list(v) for k, v in (method_scopes or {}).items()}
        supported = list(scopes_supported) if scopes_supported is not None else None
        if supported is None:
            every = list(self.required_scopes)
            for group in (*self.tool_scopes.values(), *self.method_scopes.values()):
                every.extend(group)
            supported = list(dict.fromkeys(every)) or None
        self.scopes_supported = supported
        self.resource_name = resource_name
        self.extra_metadata = dict(metadata or {})
        self.metadata_url = well_known_url(resource, "oauth-protected-resource")
        paths = [urlsplit(self.metadata_url).path]
        if serve_root_metadata and paths[0] != "/.well-known/oauth-protected-resource":
            paths.append("/.well-known/oauth-protected-resource")
        self.metadata_paths = tuple(paths)

    # ------------------------------------------------------------------ policy
    def require_tool(self, tool: str, *scopes: str) -> None:
        """Calling ``tool`` needs ``scopes`` on top of the required ones."""
        self.tool_scopes.setdefault(tool, []).extend(scopes)
        if self.scopes_supported is not None:
            self.scopes_supported = list(dict.fromkeys([*self.scopes_supported, *scopes]))

    @property
    def has_call_scopes(self) -> bool:
        return bool(self.tool_scopes or self.method_scopes)

    def metadata_document(self) -> dict[str, Any]:
        """The RFC 9728 Protected Resource Metadata this resource serves at its well-known path."""
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            doc["scopes_supported"] = self.scopes_supported
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        doc.update(self.extra_metadata)
        return doc

    def challenge(self, failure: AuthFailure | None = None) -> str:
        """The ``WWW-Authenticate: Bearer ...`` value for a 401 or 403: ``resource_metadata``,
        the scopes to ask for and, for a refusal, its ``error``."""
        params: dict[str, str | None] = {}
        if failure is not None and failure.error:
            params["error"] = failure.error
            params["error_description"] = failure.description
        scopes = failure.scopes if failure is not None and failure.scopes else None
        if scopes is None and self.required_scopes:
            scopes = self.required_scopes
        params["scope"] = " ".join(scopes) if scopes else None
        params["resource_metadata"] = self.metadata_url
        return format_challenge("Bearer", params)

    async def authenticate(self, raw_headers: Iterable[tuple[bytes, bytes]]) -> Principal:
        """The principal behind the request's bearer token, or :class:`AuthFailure`."""
        values = [v for k, v in raw_headers if k.lower() == b"authorization"]
        if not values:
            raise AuthFailure(401, None, "Authorization required")
        if len(values) > 1:
            raise AuthFailure(400, "invalid_request", "more than one Authorization header")
        try:
            text = values[0].decode("ascii").strip()
        except UnicodeDecodeError:
            raise AuthFailure(400, "invalid_request", "malformed Authorization header") from None
        scheme, _, token = text.partition(" ")
        if scheme.lower() != "bearer":
            raise AuthFailure(401, None, "Bearer token required")
        token = token.strip()
        if not token or any(ch not in _TOKEN68 for ch in token):
            raise AuthFailure(400, "invalid_request", "malformed bearer token")
        try:
            principal = await self.verifier.verify(token)
        except InvalidToken as exc:
            raise AuthFailure(401, exc.error, exc.description) from None
        self.check_scopes(principal, self.required_scopes)
        return principal

    def check_scopes(self, principal: Principal, needed: Sequence[str]) -> None:
        """Raise a 403 ``insufficient_scope`` :class:`AuthFailure` naming what to ask for
        unless ``principal`` has every scope in ``needed``."""
        if needed and not principal.has_scopes(needed):
            wanted = list(dict.fromkeys([*self.required_scopes, *needed]))
            missing = " ".join(principal.missing_scopes(needed))
            raise AuthFailure(403, "insufficient_scope", f"missing scope: {missing}", wanted)

    def scopes_for_call(self, message: object) -> list[str]:
        """Extra scopes one JSON-RPC body needs (``tools/call`` by tool, or by method)."""
        items = message if isinstance(message, list) else [message]
        needed: list[str] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            method = item.get("method")
            if not isinstance(method, str):
                continue
            needed.extend(self.method_scopes.get(method, ()))
            if method == "tools/call":
                params = item.get("params")
                name = params.get("name") if isinstance(params, dict) else None
                if isinstance(name, str):
                    needed.extend(self.tool_scopes.get(name, ()))
        return list(dict.fromkeys(needed))

    # ------------------------------------------------------------------ wiring
    async def principal_of(self, scope: Scope, headers: dict[str, str]) -> Principal:
        """``McpHttpApp(authenticate=auth.principal_of)``: the principal the wrapper verified."""
        principal = scope.get(PRINCIPAL_SCOPE_KEY)
        if not isinstance(principal, Principal):
            # Fail closed: the app was reached without going through ProtectedResource.
            raise RuntimeError("BearerAuth.principal_of needs the ProtectedResource wrapper")
        return principal

    @property
    def path(self) -> str:
        """The HTTP path of the protected resource: where ``McpHttpApp(auth=...)`` serves."""
        return urlsplit(self.resource).path or "/mcp"

    def wrap(self, app: ASGIApp, *, max_body_bytes: int | None = None) -> ProtectedResource:
        """The guard in front of ``app``; ``McpHttpApp(auth=...)`` calls it on itself."""
        return ProtectedResource(app, self, max_body_bytes=max_body_bytes)


class ProtectedResource:
    """ASGI wrapper: metadata endpoint + authentication in front of an app."""

    def __init__(
        self,
        app: ASGIApp,
        auth: BearerAuth,
        *,
        max_body_bytes: int | None = None,
        protected_paths: Sequence[str] | None = None,
    ) -> None:
        self.app = app
        self.auth = auth
        options = getattr(app, "options", None)
        limit = max_body_bytes or getattr(options, "max_body_bytes", None) or 4 * 1024 * 1024
        self.max_body_bytes = int(limit)
        self.protected_paths = tuple(protected_paths) if protected_paths is not None else None
        self._metadata_body = encode(auth.metadata_document())

    def __getattr__(self, name: str) -> Any:  # server, options, lifespan_context, aclose ...
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET")
        if path in self.auth.metadata_paths:
            await self._metadata(method, send)
            return
        if method == "OPTIONS" or not self._protects(path):
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", ()))
        try:
            principal = await self.auth.authenticate(headers)
        except AuthFailure as failure:
            await self._refuse(send, failure)
            return
        if method == "POST" and self.auth.has_call_scopes:
            try:
                chunks = await read_chunks(receive, self.max_body_bytes)
            except ClientGone:
                return
            except BodyTooLarge:
                await _send_json(
                    send,
                    413,
                    {"error": "invalid_request", "error_description": "request body too large"},
                )
                return
            try:
                message = decode(b"".join(chunks))
            except DecodeError:
                message = None  # the app answers the parse error
            try:
                self.auth.check_scopes(principal, self.auth.scopes_for_call(message))
            except AuthFailure as failure:
                await self._refuse(send, failure)
                return
            receive = replay_body(b"".join(chunks), receive)
        inner = dict(scope)
        inner["headers"] = [(k, v) for k, v in headers if k.lower() != b"authorization"]
        inner[PRINCIPAL_SCOPE_KEY] = principal
        await self.app(inner, receive, send)

    def _protects(self, path: str) -> bool:
        if self.protected_paths is None:
            return True
        return any(path == p or path.rstrip("/") == p.rstrip("/") for p in self.protected_paths)

    async def _metadata(self, method: str, send: Send) -> None:
        cors = [(b"access-control-allow-origin", b"*")]
        if method in ("GET", "HEAD"):
            await _send_bytes(
                send,
                200,
                self._metadata_body if method == "GET" else b"",
                [(b"content-type", b"application/json"), (b"cache-control", b"max-age=300"), *cors],
            )
        elif method == "OPTIONS":
            await _send_bytes(
                send, 204, b"", [*cors, (b"access-control-allow-methods", b"GET, HEAD, OPTIONS")]
            )
        else:
            await _send_bytes(send, 405, b"", [(b"allow", b"GET, HEAD, OPTIONS")])

    async def _refuse(self, send: Send, failure: AuthFailure) -> None:
        body: dict[str, str] = {
            "error": failure.error or "invalid_token",
            "error_description": failure.description,
        }
        headers = [(b"www-authenticate", self.auth.challenge(failure).encode("latin-1", "replace"))]
        await _send_json(send, failure.status, body, headers)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` (already read) again, then the connection's own
    messages: the app behind reads the request as if nobody had (also the gateway's, which
    reads a body to decide on it before its endpoint does)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _send_bytes(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _send_json(
    send: Send, status: int, payload: object, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await _send_bytes(
        send, status, encode(payload), [(b"content-type", b"application/json"), *(headers or [])]
    )
