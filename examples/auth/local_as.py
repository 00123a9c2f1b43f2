"""A small OAuth 2.1 authorization server for tests and demos — a test double.

Authorization servers are outside MCP's scope; this one exists so the protected example
server and the OAuth client can be run and tested end to end on one machine.  It approves
every authorization request at once (an immediate 302 back to the client, no login page),
so never expose it.  What it does implement properly, because the client and the resource
server are tested against it:

* RFC 8414 metadata (``/.well-known/oauth-authorization-server``) with
  ``code_challenge_methods_supported: ["S256"]`` and
  ``authorization_response_iss_parameter_supported: true``; a JWKS at ``/jwks.json``;
* dynamic client registration (RFC 7591), exact redirect-URI matching;
* authorization code with PKCE S256 (required), RFC 8707 ``resource`` (becomes the
  token's ``aud``), RFC 9207 ``iss`` in the redirect;
* the token endpoint: ``authorization_code``, ``refresh_token`` (rotated) and
  ``client_credentials``, client authentication ``none``/``client_secret_basic``/
  ``client_secret_post``; access tokens are ES256 JWTs (RFC 9068: ``iss``, ``sub``,
  ``aud``, ``scope``, ``client_id``, ``exp``, ``iat``, ``jti``; ``typ: at+jwt``);
* token introspection (RFC 7662) at ``/introspect``.

Run it::

    python examples/auth/local_as.py --port 9000
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from joserfc import jwt
from joserfc.jwk import ECKey

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass
class Client:
    client_id: str
    client_secret: str | None
    redirect_uris: list[str]
    auth_method: str
    grant_types: list[str]


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    scope: str
    resource: str | None
    subject: str
    expires_at: float


@dataclass
class Refresh:
    client_id: str
    scope: str
    resource: str | None
    subject: str


@dataclass
class LocalAuthorizationServer:
    """An ASGI app; ``issuer`` must be the URL it is served at (e.g. http://127.0.0.1:9000)."""

    issuer: str
    scopes_supported: list[str] = field(default_factory=lambda: ["mcp", "mcp:admin"])
    subject: str = "demo-user"
    token_ttl_s: int = 3600
    #: scopes granted at most (None: whatever is asked within scopes_supported)
    grant_ceiling: list[str] | None = None
    key: Any = None
    clients: dict[str, Client] = field(default_factory=dict)
    codes: dict[str, Grant] = field(default_factory=dict)
    refresh_tokens: dict[str, Refresh] = field(default_factory=dict)
    #: every request's (method, path, form/query) for tests to inspect
    log: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.issuer = self.issuer.rstrip("/")
        if self.key is None:
            self.key = ECKey.generate_key("P-256", private=True, parameters={"kid": "as-key-1"})

    # ------------------------------------------------------------------ documents
    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "introspection_endpoint": f"{base}/introspect",
            "jwks_uri": f"{base}/jwks.json",
            "scopes_supported": [*self.scopes_supported, "offline_access"],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "authorization_response_iss_parameter_supported": True,
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.key.as_dict(private=False)]}

    # ------------------------------------------------------------------ tokens
    def mint(
        self,
        *,
        subject: str | None = None,
        audience: str | list[str] | None,
        scope: str = "",
        client_id: str | None = "test-client",
        ttl_s: int | None = None,
        issuer: str | None = None,
        key: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """Sign an access token (tests use this for wrong-audience/expired/foreign tokens)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": issuer or self.issuer,
            "sub": subject or self.subject,
            "iat": now,
            "exp": now + (self.token_ttl_s if ttl_s is None else ttl_s),
            "jti": secrets.token_urlsafe(12),
        }
        if audience is not None:
            claims["aud"] = audience
        if scope:
            claims["scope"] = scope
        if client_id is not None:
            claims["client_id"] = client_id
        claims.update(extra or {})
        signer = key or self.key
        header = {"alg": "ES256", "typ": "at+jwt", "kid": signer.kid or "unknown"}
        return jwt.encode(header, claims, signer, algorithms=["ES256"])

    def _granted(self, requested: str) -> str:
        allowed = set(self.grant_ceiling or [*self.scopes_supported, "offline_access"])
        return " ".join(s for s in requested.split() if s in allowed)

    def _token_response(
        self, client: Client, scope: str, resource: str | None, subject: str, refresh: bool
    ) -> dict[str, Any]:
        token = self.mint(
            subject=subject, audience=resource, scope=scope, client_id=client.client_id
        )
        body: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.token_ttl_s,
        }
        if scope:
            body["scope"] = scope
        if refresh:
            value = secrets.token_urlsafe(24)
            self.refresh_tokens[value] = Refresh(client.client_id, scope, resource, subject)
            body["refresh_token"] = value
        return body

    # ------------------------------------------------------------------ ASGI
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        method: str = scope["method"]
        path: str = scope["path"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        form: dict[str, str] = {}
        if method == "POST" and "json" in headers.get("content-type", ""):
            try:
                form = {"__json__": body.decode("utf-8")}
            except UnicodeDecodeError:
                form = {}
        elif method == "POST":
            form = dict(parse_qsl(body.decode("latin-1")))
        self.log.append((method, path, {**query, **form}))
        status, payload, extra = self.route(method, path, query, form, headers)
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        out_headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
        out_headers += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": out_headers})
        await send({"type": "http.response.body", "body": raw})

    def route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        form: dict[str, str],
        headers: dict[str, str],
    ) -> tuple[int, Any, dict[str, str]]:
        if method == "GET" and path in (
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ):
            return 200, self.metadata(), {}
        if method == "GET" and path == "/jwks.json":
            return 200, self.jwks(), {}
        if method == "POST" and path == "/register":
            return self.register(form)
        if method == "GET" and path == "/authorize":
            return self.authorize(query)
        if method == "POST" and path == "/token":
            return self.token(form, headers)
        if method == "POST" and path == "/introspect":
            return self.introspect(form, headers)
        return 404, {"error": "not_found"}, {}

    @staticmethod
    def _error(status: int, error: str, description: str) -> tuple[int, Any, dict[str, str]]:
        return status, {"error": error, "error_description": description}, {}

    def register(self, form: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        try:
            request = json.loads(form.get("__json__", ""))
        except ValueError:
            return self._error(400, "invalid_client_metadata", "JSON body expected")
        uris = request.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            return self._error(400, "invalid_redirect_uri", "redirect_uris required")
        method = request.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in ("none", "client_secret_basic", "client_secret_post"):
            return self._error(400, "invalid_client_metadata", f"unsupported method {method}")
        client = Client(
            client_id=f"client-{secrets.token_hex(6)}",
            client_secret=None if method == "none" else secrets.token_urlsafe(24),
            redirect_uris=list(uris),
            auth_method=method,
            grant_types=list(request.get("grant_types") or ["authorization_code"]),
        )
        self.clients[client.client_id] = client
        answer: dict[str, Any] = {
            "client_id": client.client_id,
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": method,
            "grant_types": client.grant_types,
            "client_name": request.get("client_name", ""),
        }
        if client.client_secret is not None:
            answer["client_secret"] = client.client_secret
            answer["client_secret_expires_at"] = 0
        return 201, answer, {}

    def add_client(
        self,
        client_id: str,
        client_secret: str | None = None,
        *,
        redirect_uris: list[str] | None = None,
        auth_method: str = "client_secret_basic",
    ) -> Client:
        """Pre-register a client (e.g. a machine client for client_credentials)."""
        client = Client(
            client_id,
            client_secret,
            redirect_uris or [],
            auth_method,
            ["authorization_code", "refresh_token", "client_credentials"],
        )
        self.clients[client_id] = client
        return client

    def authorize(self, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        client = self.clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        if client is None or redirect_uri not in client.redirect_uris:
            # Never redirect to an unverified URI.
            return self._error(400, "invalid_request", "unknown client or redirect_uri")
        params: dict[str, str] = {"iss": self.issuer}
        if "state" in query:
            params["state"] = query["state"]
        challenge = query.get("code_challenge")
        if query.get("response_type") != "code":
            params["error"] = "unsupported_response_type"
        elif not challenge or query.get("code_challenge_method") != "S256":
            params["error"] = "invalid_request"
            params["error_description"] = "PKCE with S256 is required"
        else:
            code = secrets.token_urlsafe(24)
            self.codes[code] = Grant(
                client.client_id,
                redirect_uri,
                challenge,
                self._granted(query.get("scope", "")),
                query.get("resource"),
                self.subject,
                time.time() + 60,
            )
            params["code"] = code
        parts = urlsplit(redirect_uri)
        joined = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
        location = urlunsplit((parts.scheme, parts.netloc, parts.path, joined, ""))
        return 302, b"", {"location": location}

    def _client_auth(self, form: dict[str, str], headers: dict[str, str]) -> Client | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                raw = base64.b64decode(auth[6:]).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return None
            client_id, _, secret = raw.partition(":")
            client = self.clients.get(unquote(client_id))
            if client is None or client.client_secret is None:
                return None
            if not secrets.compare_digest(client.client_secret, unquote(secret)):
                return None
            return client
        client = self.clients.get(form.get("client_id", ""))
        if client is None:
            return None
        if client.client_secret is None:
            return client if client.auth_method == "none" else None
        given = form.get("client_secret")
        if given is None or not secrets.compare_digest(client.client_secret, given):
            return None
        return client

    def token(
        self, form: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        client = self._client_auth(form, headers)
        if client is None:
            return self._error(401, "invalid_client", "client authentication failed")
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            grant = self.codes.pop(form.get("code", ""), None)  # single use
            if (
                grant is None
                or grant.client_id != client.client_id
                or grant.expires_at < time.time()
            ):
                return self._error(400, "invalid_grant", "unknown, used or expired code")
            if form.get("redirect_uri") != grant.redirect_uri:
                return self._error(400, "invalid_grant", "redirect_uri mismatch")
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
            computed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if not secrets.compare_digest(computed, grant.challenge):
                return self._error(400, "invalid_grant", "PKCE verification failed")
            resource = form.get("resource")
            if resource != grant.resource:
                return self._error(400, "invalid_target", "resource differs from authorization")
            refresh = "refresh_token" in client.grant_types
            return (
                200,
                self._token_response(client, grant.scope, resource, grant.subject, refresh),
                {},
            )
        if grant_type == "refresh_token":
            stored = self.refresh_tokens.pop(form.get("refresh_token", ""), None)  # rotation
            if stored is None or stored.client_id != client.client_id:
                return self._error(400, "invalid_grant", "unknown refresh token")
            resource = form.get("resource") or stored.resource
            if resource != stored.resource:
                return self._error(400, "invalid_target", "resource differs from the grant")
            return (
                200,
                self._token_response(client, stored.scope, resource, stored.subject, True),
                {},
            )
        if grant_type == "client_credentials":
            if client.client_secret is None:
                return self._error(400, "unauthorized_client", "public clients cannot do that")
            scope = self._granted(form.get("scope", ""))
            body = self._token_response(
                client, scope, form.get("resource"), client.client_id, False
            )
            return 200, body, {}
        return self._error(400, "unsupported_grant_type", f"unsupported {grant_type}")

    def introspect(
        self, form: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        if self._client_auth(form, headers) is None:
            return self._error(401, "invalid_client", "client authentication failed")
        try:
            claims = jwt.decode(form.get("token", ""), self.key, algorithms=["ES256"]).claims
        except Exception:
            return 200, {"active": False}, {}
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= time.time():
            return 200, {"active": False}, {}
        return 200, {"active": True, "token_type": "Bearer", **claims}, {}


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="ID:SECRET",
        help="pre-register a confidential client (client_credentials)",
    )
    parser.add_argument(
        "--token-ttl", type=int, default=3600, metavar="S", help="access token lifetime"
    )
    args = parser.parse_args()
    server = LocalAuthorizationServer(f"http://{args.host}:{args.port}")
    server.token_ttl_s = args.token_ttl
    for item in args.client:
        client_id, _, secret = item.partition(":")
        server.add_client(client_id, secret or None)
    print(f"local authorization server (test double) at {server.issuer}", flush=True)
    uvicorn.run(server, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
