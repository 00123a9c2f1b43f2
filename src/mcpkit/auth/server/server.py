"""The OAuth 2.1 authorization server (ASGI) that MCP clients sign in with.

Endpoints, under the issuer's path:

* ``/.well-known/oauth-authorization-server`` (RFC 8414 metadata) and ``/jwks.json``;
* ``/register``: dynamic client registration (RFC 7591); a ``client_id`` that is an https
  URL is a Client ID Metadata Document instead, fetched through the SSRF guard;
* ``/authorize``: the authorization request (code + PKCE S256 only, exact redirect URI
  with the loopback port rule, RFC 8707 ``resource``), then the consent page;
* ``/consent``: the consent form's POST (CSRF token bound to a cookie), which sends the
  user to the upstream identity provider;
* ``/oauth/callback``: back from the provider; issues a one-use authorization code;
* ``/token``: ``authorization_code`` and ``refresh_token`` (rotated, a reused token revokes
  its whole family); access tokens are RFC 9068 ``at+jwt`` JWTs for exactly one resource;
* ``/revoke``: RFC 7009 (revoking either token revokes the grant it belongs to).

The last two, and the verifier of the tokens they issue, are :mod:`.tokens`.

Protocol logic is written here against the state backends (authlib's server classes are
bound to synchronous Flask/Django request objects and their own storage models); every
cryptographic step — key generation, JWS signing, JWKS, ID token validation — is joserfc's.
"""

from __future__ import annotations

import hmac
import html
import re
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from ...state.base import StateBackend, open_backend
from ..client.ssrf import UrlPolicy
from ..resource_server import BearerAuth, ProtectedResource
from ..urls import require_secure_url, well_known_url
from ..verifiers import JwtVerifier
from . import web
from .clients import (
    Client,
    RegistrationError,
    fetch_metadata_document,
    is_metadata_document_id,
    redirect_matches,
    register,
)
from .keys import KeyRing
from .store import Store
from .tokens import IssuedTokens, TokenError, revoke_endpoint, token_endpoint
from .upstream import Transaction, Upstream, UpstreamError

__all__ = ["AuthorizationServer"]

CSRF_COOKIE = "mcpkit_as_csrf"
_CHALLENGE = re.compile(r"^[A-Za-z0-9\-_]{43}$")


class AuthorizationServer:
    """An OAuth 2.1 authorization server federating sign-in to one upstream provider.

    ``issuer``: this server's public base URL (``https://mcp.example.com``).
    ``upstream``: where users sign in (:class:`~.upstream.OidcUpstream`, a preset, or
    :class:`~.upstream.GitHubUpstream`); register ``{issuer}/oauth/callback`` there.
    ``resources``: the MCP servers (canonical URIs) it issues tokens for; by default the one
    it is mounted in front of, ``{issuer}{path}``.
    ``state``: a state backend or its URL (SQLite by default; Redis for replicas).
    ``clients``: pre-registered clients (RFC 7591 metadata with a ``client_id``).
    ``metadata_policy``: where Client ID Metadata Documents may be fetched from.

    ``McpHttpApp(server, auth=AuthorizationServer(...))`` serves both the MCP server (as a
    resource server accepting these tokens) and this authorization server on one origin.
    """

    def __init__(
        self,
        issuer: str,
        upstream: Upstream,
        *,
        path: str = "/mcp",
        resources: Sequence[str] | None = None,
        scopes: Sequence[str] = ("mcp",),
        required_scopes: Sequence[str] = (),
        state: StateBackend | str = "sqlite:///.mcpkit/authserver.db",
        clients: Sequence[dict[str, Any]] = (),
        consent: bool = True,
        access_token_ttl_s: int = 3600,
        refresh_token_ttl_s: int = 30 * 86400,
        code_ttl_s: int = 60,
        key_rotation_s: float = 30 * 86400,
        metadata_policy: UrlPolicy | None = None,
    ) -> None:
        require_secure_url(issuer, "issuer")
        parts = urlsplit(issuer)
        if parts.query or parts.fragment:
            raise ValueError("the issuer URL has no query or fragment (RFC 8414)")
        self.issuer = issuer.rstrip("/")
        self.upstream = upstream
        self._path = path if path.startswith("/") else f"/{path}"
        self.resources = list(resources) if resources else [f"{self.issuer}{self._path}"]
        self.scopes = list(scopes)
        self.required_scopes = list(required_scopes)
        self._state = state
        self._store: Store | None = None
        self._keys: KeyRing | None = None
        self.static_clients = {c["client_id"]: _static_client(c) for c in clients}
        self.consent = consent
        self.access_token_ttl_s = access_token_ttl_s
        self.refresh_token_ttl_s = refresh_token_ttl_s
        self.code_ttl_s = code_ttl_s
        self.key_rotation_s = key_rotation_s
        self.metadata_policy = metadata_policy or UrlPolicy()
        self.prefix = parts.path.rstrip("/")
        self.routes: dict[str, web.ASGIApp] = {
            well_known_url(self.issuer, "oauth-authorization-server").split(parts.netloc, 1)[
                1
            ]: self._metadata,
            f"{self.prefix}/jwks.json": self._jwks,
            f"{self.prefix}/register": self._register,
            f"{self.prefix}/authorize": self._authorize,
            f"{self.prefix}/consent": self._consent,
            f"{self.prefix}/oauth/callback": self._callback,
            f"{self.prefix}/token": partial(token_endpoint, self),
            f"{self.prefix}/revoke": partial(revoke_endpoint, self),
        }
        self._secure_cookie = parts.scheme == "https"
        self._verifier: JwtVerifier | None = None
        self._bearer: BearerAuth | None = None
        self._verifier_kids: tuple[str, ...] = ()

    # ------------------------------------------------------------------ state
    @property
    def store(self) -> Store:
        """The records on the state backend (opened on first use)."""
        if self._store is None:
            backend = open_backend(self._state) if isinstance(self._state, str) else self._state
            self._store = Store(backend)
            retain = self.access_token_ttl_s + 300
            self._keys = KeyRing(backend, rotate_after_s=self.key_rotation_s, retain_s=retain)
        return self._store

    @property
    def keys(self) -> KeyRing:
        """The signing keys (on the same backend)."""
        _ = self.store
        assert self._keys is not None
        return self._keys

    @property
    def callback_url(self) -> str:
        """The redirect URI to register at the upstream provider."""
        return f"{self.issuer}/oauth/callback"

    def metadata_document(self) -> dict[str, Any]:
        """The RFC 8414 authorization server metadata."""
        base = self.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "revocation_endpoint": f"{base}/revoke",
            "jwks_uri": f"{base}/jwks.json",
            "scopes_supported": self.scopes,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "revocation_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }

    # ------------------------------------------------------------------ HttpAuth
    @property
    def path(self) -> str:
        """Where ``McpHttpApp(auth=...)`` serves the MCP endpoint."""
        return self._path

    def bearer(self) -> BearerAuth:
        """The resource-server policy of the first resource: tokens of this server only."""
        if self._bearer is None:
            self._bearer = self._make_bearer()
        return self._bearer

    def _make_bearer(self) -> BearerAuth:
        return self.resource_server()

    def resource_server(
        self,
        *,
        tool_scopes: Mapping[str, Iterable[str]] | None = None,
        resource_name: str | None = None,
    ) -> BearerAuth:
        """A new resource-server policy for the first resource, accepting tokens of this
        server only, with per-tool scopes (a 403 step-up) and a name for its RFC 9728
        metadata: what a front with its own call checks (the gateway) builds on."""
        return BearerAuth(
            IssuedTokens(self),
            resource=self.resources[0],
            authorization_servers=[self.issuer],
            required_scopes=self.required_scopes,
            scopes_supported=self.scopes,
            tool_scopes=tool_scopes,
            resource_name=resource_name,
        )

    async def principal_of(self, scope: web.Scope, headers: dict[str, str]) -> object:
        """The principal the resource-server guard verified (``McpHttpApp`` asks it)."""
        return await self.bearer().principal_of(scope, headers)

    def wrap(self, app: web.ASGIApp, *, max_body_bytes: int | None = None) -> _Front:
        """``app`` behind the resource-server guard, with this server's endpoints beside it."""
        return _Front(self, self.bearer().wrap(app, max_body_bytes=max_body_bytes))

    async def __call__(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        """Standalone: only the authorization server's endpoints (404 for anything else)."""
        if scope["type"] != "http":
            return  # no lifespan work: state opens on first use
        if not await self.handle(scope, receive, send):
            await web.send_json(send, 404, {"error": "not_found"})

    async def handle(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> bool:
        """Answer the request when its path is one of this server's; False otherwise."""
        handler = self.routes.get(scope.get("path", ""))
        if handler is None:
            return False
        try:
            await handler(scope, receive, send)
        except web.BadRequest as exc:
            await web.oauth_error(send, 400, "invalid_request", str(exc))
        return True

    # ------------------------------------------------------------------ metadata, keys
    async def _metadata(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        await web.send_json(
            send, 200, self.metadata_document(), [(b"access-control-allow-origin", b"*")]
        )

    async def _jwks(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        jwks = await self.keys.public_jwks()
        await web.send_json(
            send,
            200,
            jwks,
            [(b"access-control-allow-origin", b"*"), (b"cache-control", b"max-age=300")],
        )

    # ------------------------------------------------------------------ clients
    async def _register(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        if scope.get("method") != "POST":
            await web.respond(send, 405, b"", [(b"allow", b"POST")])
            return
        try:
            client = register(await web.json_body(scope, receive))
        except RegistrationError as exc:
            await web.oauth_error(send, 400, exc.error, exc.description)
            return
        await self.store.put("client", client.client_id, client.record(), None)
        answer = {**client.record(), "client_id_issued_at": int(time.time())}
        if client.client_secret is not None:
            answer["client_secret_expires_at"] = 0
        await web.send_json(send, 201, answer, web.NO_STORE)

    async def client(self, client_id: str) -> Client:
        """A known client: pre-registered, registered, or described by its metadata document."""
        if client_id in self.static_clients:
            return self.static_clients[client_id]
        if _is_document_id(client_id, self.metadata_policy):
            return await fetch_metadata_document(client_id, self.metadata_policy)
        record = await self.store.get("client", client_id)
        if record is None:
            raise RegistrationError("invalid_client", "unknown client")
        return Client.from_record(record)

    # ------------------------------------------------------------------ authorize
    async def _authorize(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await web.respond(send, 405, b"", [(b"allow", b"GET")])
            return
        params = web.query(scope)
        # Until the client and its redirect URI are known, errors are shown here: a
        # redirect to an unchecked URI would be an open redirector.
        try:
            client = await self.client(params.get("client_id", ""))
        except RegistrationError as exc:
            await web.error_page(send, 400, f"Unknown or invalid client: {exc.description}")
            return
        redirect_uri = params.get("redirect_uri") or (
            client.redirect_uris[0] if len(client.redirect_uris) == 1 else ""
        )
        if not redirect_matches(client.redirect_uris, redirect_uri):
            await web.error_page(send, 400, "The redirect URI is not registered for this client.")
            return
        state = params.get("state")

        async def fail(error: str, description: str) -> None:
            target = web.with_params(
                redirect_uri,
                {
                    "error": error,
                    "error_description": description,
                    "state": state,
                    "iss": self.issuer,
                },
            )
            await web.redirect(send, target)

        if params.get("response_type") != "code":
            await fail("unsupported_response_type", "only response_type=code is supported")
            return
        if params.get("code_challenge_method") != "S256":
            await fail("invalid_request", "PKCE with code_challenge_method=S256 is required")
            return
        challenge = params.get("code_challenge", "")
        if not _CHALLENGE.match(challenge):
            await fail(
                "invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)"
            )
            return
        try:
            resource = self._resource(params.get("resource"))
            granted = self._scopes(params.get("scope"))
        except TokenError as exc:
            await fail(exc.error, exc.description)
            return
        request_id = secrets.token_urlsafe(24)
        csrf = secrets.token_urlsafe(24)
        record = {
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "redirect_given": "redirect_uri" in params,
            "state": state,
            "code_challenge": challenge,
            "scope": granted,
            "resource": resource,
            "csrf": csrf,
        }
        await self.store.put("request", request_id, record, 600)
        cookie = self._cookie(csrf)
        if not self.consent:
            await self._to_upstream(send, request_id, cookie)
            return
        await self._consent_page(send, client, record, request_id, csrf, cookie)

    def _resource(self, asked: str | None) -> str:
        if asked is None or asked == "":
            if len(self.resources) == 1:
                return self.resources[0]
            raise TokenError("invalid_target", "the resource parameter is required")
        for known in self.resources:
            if asked == known or asked.rstrip("/") == known.rstrip("/"):
                return known
        raise TokenError("invalid_target", f"unknown resource: {asked}")

    def _scopes(self, asked: str | None) -> list[str]:
        if not asked:
            return list(self.scopes)
        # Refresh tokens come with every grant: a client asking for them by scope is served.
        wanted = [s for s in dict.fromkeys(asked.split()) if s != "offline_access"]
        unknown = [s for s in wanted if s not in self.scopes]
        if unknown:
            raise TokenError("invalid_scope", f"unknown scope: {' '.join(unknown)}")
        return wanted or list(self.scopes)

    def _cookie(self, csrf: str) -> tuple[bytes, bytes]:
        attributes = (
            f"{CSRF_COOKIE}={csrf}; Path={self.prefix or '/'}; HttpOnly; SameSite=Lax; Max-Age=600"
        )
        if self._secure_cookie:
            attributes += "; Secure"
        return (b"set-cookie", attributes.encode("latin-1"))

    async def _consent_page(
        self,
        send: web.Send,
        client: Client,
        record: dict[str, Any],
        request_id: str,
        csrf: str,
        cookie: tuple[bytes, bytes],
    ) -> None:
        e = html.escape
        body = (
            f"<p><b>{e(client.display_name)}</b> asks to use <b>{e(record['resource'])}</b> "
            "on your behalf.</p><dl>"
            f"<dt>Client</dt><dd>{e(client.client_id)}</dd>"
            f"<dt>Returns to</dt><dd>{e(record['redirect_uri'])}</dd>"
            f"<dt>Access</dt><dd>{e(' '.join(record['scope']))}</dd></dl>"
            f"<form method='post' action='{e(self.prefix)}/consent'>"
            f"<input type='hidden' name='request' value='{e(request_id)}'>"
            f"<input type='hidden' name='csrf' value='{e(csrf)}'>"
            "<button name='decision' value='approve'>Allow and sign in</button>"
            "<button name='decision' value='deny'>Deny</button></form>"
        )
        await web.page(send, 200, "Allow access?", body, [cookie])

    async def _consent(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        if scope.get("method") != "POST":
            await web.respond(send, 405, b"", [(b"allow", b"POST")])
            return
        data = await web.form(scope, receive)
        request_id = data.get("request", "")
        record = await self.store.get("request", request_id)
        cookie = web.cookies(scope).get(CSRF_COOKIE, "")
        if record is None:
            await web.error_page(send, 400, "This sign-in request has expired; start again.")
            return
        if not (
            hmac.compare_digest(data.get("csrf", ""), record["csrf"])
            and hmac.compare_digest(cookie, record["csrf"])
        ):
            await web.error_page(
                send, 403, "The consent form did not come from this browser's sign-in."
            )
            return
        if data.get("decision") != "approve":
            await self.store.take("request", request_id)
            target = web.with_params(
                record["redirect_uri"],
                {
                    "error": "access_denied",
                    "error_description": "the user denied access",
                    "state": record["state"],
                    "iss": self.issuer,
                },
            )
            await web.redirect(send, target)
            return
        await self._to_upstream(send, request_id, None)

    async def _to_upstream(
        self, send: web.Send, request_id: str, cookie: tuple[bytes, bytes] | None
    ) -> None:
        tx = Transaction.new()
        await self.store.put(
            "tx",
            tx.state,
            {"request": request_id, "nonce": tx.nonce, "verifier": tx.code_verifier},
            600,
        )
        url = await self.upstream.authorization_url(self.callback_url, tx)
        await web.redirect(send, url, [cookie] if cookie else [])

    # ------------------------------------------------------------------ callback
    async def _callback(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        params = web.query(scope)
        tx_record = await self.store.take("tx", params.get("state", ""))
        if tx_record is None:
            await web.error_page(send, 400, "Unknown or used sign-in state; start again.")
            return
        record = await self.store.take("request", tx_record["request"])
        if record is None:
            await web.error_page(send, 400, "This sign-in request has expired; start again.")
            return
        cookie = web.cookies(scope).get(CSRF_COOKIE, "")
        if not hmac.compare_digest(cookie, record["csrf"]):
            await web.error_page(send, 403, "The sign-in did not start in this browser.")
            return

        async def back(params: dict[str, str | None]) -> None:
            target = web.with_params(
                record["redirect_uri"], {**params, "state": record["state"], "iss": self.issuer}
            )
            await web.redirect(send, target, [self._clear_cookie()])

        if "error" in params or "code" not in params:
            await back(
                {
                    "error": "access_denied",
                    "error_description": "sign-in at the identity provider failed",
                }
            )
            return
        tx = Transaction(params["state"], tx_record["nonce"], tx_record["verifier"])
        try:
            identity = await self.upstream.identify(params["code"], self.callback_url, tx)
        except UpstreamError as exc:
            await back({"error": "access_denied", "error_description": str(exc)})
            return
        code = secrets.token_urlsafe(32)
        grant = {
            "client_id": record["client_id"],
            "redirect_uri": record["redirect_uri"] if record["redirect_given"] else None,
            "code_challenge": record["code_challenge"],
            "scope": record["scope"],
            "resource": record["resource"],
            "identity": identity.claims(),
            "grant": secrets.token_urlsafe(16),
            "used": False,
        }
        await self.store.put("code", code, grant, self.code_ttl_s)
        await back({"code": code})

    def _clear_cookie(self) -> tuple[bytes, bytes]:
        return (
            b"set-cookie",
            f"{CSRF_COOKIE}=; Path={self.prefix or '/'}; Max-Age=0".encode("latin-1"),
        )

    # ------------------------------------------------------------------ verifying
    async def verifier_for(self, audiences: Sequence[str]) -> JwtVerifier:
        """A JWT verifier over this server's current public keys (rebuilt when they change)."""
        jwks = await self.keys.public_jwks()
        kids = tuple(k["kid"] for k in jwks["keys"])
        if (
            self._verifier is None
            or kids != self._verifier_kids
            or tuple(audiences) != self._verifier.audiences
        ):
            self._verifier = JwtVerifier(
                issuer=self.issuer,
                audience=list(audiences),
                jwks=jwks,
                algorithms=["ES256"],
                token_types=["at+jwt"],
            )
            self._verifier_kids = kids
        return self._verifier


class _Front:
    """The MCP app behind its resource-server guard, with the authorization server's
    endpoints on the same origin (what ``AuthorizationServer.wrap`` returns)."""

    def __init__(self, authz: AuthorizationServer, guarded: ProtectedResource) -> None:
        self.authz = authz
        self.guarded = guarded

    def __getattr__(self, name: str) -> Any:  # server, options, lifespan_context ...
        return getattr(self.guarded, name)

    async def __call__(self, scope: web.Scope, receive: web.Receive, send: web.Send) -> None:
        if scope["type"] == "http" and await self.authz.handle(scope, receive, send):
            return
        await self.guarded(scope, receive, send)


def _is_document_id(client_id: str, policy: UrlPolicy) -> bool:
    if is_metadata_document_id(client_id):
        return True
    parts = urlsplit(client_id)
    return (
        policy.allow_loopback
        and parts.scheme == "http"
        and parts.path not in ("", "/")
        and bool(parts.hostname)
    )


def _static_client(data: dict[str, Any]) -> Client:
    record = dict(data)
    record.setdefault(
        "token_endpoint_auth_method",
        "client_secret_basic" if record.get("client_secret") else "none",
    )
    return Client.from_record(record)
