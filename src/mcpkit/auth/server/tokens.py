"""The token and revocation endpoints of :class:`~.server.AuthorizationServer`.

* ``/token``: ``authorization_code`` (one use: a replayed code revokes what its first use
  issued; PKCE S256 checked; the redirect URI and resource as in the authorization request)
  and ``refresh_token`` (rotated: a second use of one revokes its whole grant; a refresh
  may narrow the scope, never widen it).  Access tokens are RFC 9068 ``at+jwt`` JWTs for
  exactly one resource, signed with the server's current key.
* ``/revoke``: RFC 7009; revoking either token revokes the grant it belongs to, and the
  answer is 200 whether or not the token was known.
* :class:`IssuedTokens`: the resource server's verifier for these tokens, which also asks
  whether their grant is still active.

Clients authenticate with ``client_secret_basic``, ``client_secret_post`` or not at all
(public clients), as their registration says.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from typing import TYPE_CHECKING, Any

from ..principal import Principal
from ..verifiers import InvalidToken
from . import web
from .clients import Client, RegistrationError
from .store import token_hash

if TYPE_CHECKING:
    from .server import AuthorizationServer

_VERIFIER = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")


class TokenError(Exception):
    """A refused OAuth request: its RFC 6749 error code, description and HTTP status (the
    token endpoint answers it as JSON, the authorization endpoint as a redirect)."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


async def token_endpoint(
    authz: AuthorizationServer, scope: web.Scope, receive: web.Receive, send: web.Send
) -> None:
    """``POST /token``: the client authenticated, its grant checked and tokens issued, or
    the RFC 6749 error (401 with a Basic challenge for a client that failed to
    authenticate)."""
    if scope.get("method") != "POST":
        await web.respond(send, 405, b"", [(b"allow", b"POST")])
        return
    data = await web.form(scope, receive)
    try:
        client = await _authenticate_client(authz, scope, data)
        grant_type = data.get("grant_type")
        if not grant_type:
            raise TokenError("invalid_request", "grant_type is required")
        if grant_type not in client.grant_types:
            raise TokenError(
                "unsupported_grant_type", f"grant_type {grant_type!r} is not supported"
            )
        if grant_type == "authorization_code":
            answer = await _code_grant(authz, client, data)
        else:
            answer = await _refresh_grant(authz, client, data)
    except TokenError as exc:
        extra = [(b"www-authenticate", b'Basic realm="token"')] if exc.status == 401 else []
        await web.oauth_error(send, exc.status, exc.error, exc.description, extra)
        return
    await web.send_json(send, 200, answer, web.NO_STORE)


async def _authenticate_client(
    authz: AuthorizationServer, scope: web.Scope, data: dict[str, str]
) -> Client:
    basic = _basic_credentials(web.header(scope, b"authorization"))
    client_id = basic[0] if basic else data.get("client_id", "")
    if basic and data.get("client_id") not in (None, basic[0]):
        raise TokenError("invalid_request", "client_id differs from the Basic credentials")
    try:
        client = await authz.client(client_id)
    except RegistrationError:
        raise TokenError("invalid_client", "unknown client", 401) from None
    secret = basic[1] if basic else data.get("client_secret")
    if client.client_secret is None:
        if secret:
            raise TokenError("invalid_client", "this client has no secret", 401)
        return client
    if secret is None or not hmac.compare_digest(secret, client.client_secret):
        raise TokenError("invalid_client", "client authentication failed", 401)
    return client


async def _code_grant(
    authz: AuthorizationServer, client: Client, data: dict[str, str]
) -> dict[str, Any]:
    code = data.get("code", "")
    record, first = await authz.store.mark_used("code", code, authz.code_ttl_s)
    if record is None or record["client_id"] != client.client_id:
        raise TokenError("invalid_grant", "unknown or expired authorization code")
    if not first:
        # A replayed code: whatever its first use issued is revoked (RFC 6749 §4.1.2).
        await authz.store.revoke_grant(record["grant"], authz.refresh_token_ttl_s)
        raise TokenError("invalid_grant", "the authorization code was already used")
    if record["redirect_uri"] is not None and data.get("redirect_uri") != record["redirect_uri"]:
        raise TokenError("invalid_grant", "redirect_uri differs from the authorization request")
    verifier = data.get("code_verifier", "")
    if not _VERIFIER.match(verifier) or not hmac.compare_digest(
        _s256(verifier), record["code_challenge"]
    ):
        raise TokenError("invalid_grant", "the code_verifier does not match the code_challenge")
    if "resource" in data and authz._resource(data["resource"]) != record["resource"]:
        raise TokenError("invalid_target", "the resource differs from the authorization request")
    if not await authz.store.start_grant(record["grant"], authz.refresh_token_ttl_s):
        raise TokenError("invalid_grant", "the authorization code was already used")
    return await _issue(authz, client, record["grant"], record, record["scope"])


async def _refresh_grant(
    authz: AuthorizationServer, client: Client, data: dict[str, str]
) -> dict[str, Any]:
    presented = data.get("refresh_token", "")
    record, first = await authz.store.mark_used(
        "refresh", token_hash(presented), authz.refresh_token_ttl_s
    )
    if record is None or record["client_id"] != client.client_id:
        raise TokenError("invalid_grant", "unknown or expired refresh token")
    if not first:
        # Rotation means a refresh token works once: a second use is a stolen copy,
        # so the whole family goes (OAuth 2.1 §4.3.1).
        await authz.store.revoke_grant(record["grant"], authz.refresh_token_ttl_s)
        raise TokenError(
            "invalid_grant", "the refresh token was already used; the grant is revoked"
        )
    if "resource" in data and authz._resource(data["resource"]) != record["resource"]:
        raise TokenError("invalid_target", "a refresh token is bound to its resource")
    scope = record["scope"]
    if data.get("scope"):
        narrower = data["scope"].split()
        if not set(narrower) <= set(scope):
            raise TokenError("invalid_scope", "a refresh cannot widen the scope")
        scope = narrower
    if not await authz.store.extend_grant(record["grant"], authz.refresh_token_ttl_s):
        raise TokenError("invalid_grant", "the grant was revoked")
    return await _issue(authz, client, record["grant"], record, scope)


async def _issue(
    authz: AuthorizationServer,
    client: Client,
    grant_id: str,
    record: dict[str, Any],
    scope: list[str],
) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        **record["identity"],
        "iss": authz.issuer,
        "aud": record["resource"],
        "client_id": client.client_id,
        "scope": " ".join(scope),
        "iat": now,
        "exp": now + authz.access_token_ttl_s,
        "jti": secrets.token_urlsafe(16),
        "grant_id": grant_id,
    }
    access = await authz.keys.sign(claims, typ="at+jwt")
    answer: dict[str, Any] = {
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": authz.access_token_ttl_s,
        "scope": " ".join(scope),
    }
    if "refresh_token" in client.grant_types:
        refresh = secrets.token_urlsafe(32)
        stored = {
            "client_id": client.client_id,
            "grant": grant_id,
            "scope": record["scope"],
            "resource": record["resource"],
            "identity": record["identity"],
            "used": False,
        }
        await authz.store.put("refresh", token_hash(refresh), stored, authz.refresh_token_ttl_s)
        answer["refresh_token"] = refresh
    return answer


async def revoke_endpoint(
    authz: AuthorizationServer, scope: web.Scope, receive: web.Receive, send: web.Send
) -> None:
    """``POST /revoke`` (RFC 7009): the grant of a token the client holds is revoked."""
    if scope.get("method") != "POST":
        await web.respond(send, 405, b"", [(b"allow", b"POST")])
        return
    data = await web.form(scope, receive)
    try:
        client = await _authenticate_client(authz, scope, data)
    except TokenError as exc:
        await web.oauth_error(send, exc.status, exc.error, exc.description)
        return
    token = data.get("token", "")
    grant_id = await _grant_of(authz, token, client)
    if grant_id is not None:
        await authz.store.revoke_grant(grant_id, authz.refresh_token_ttl_s)
    # RFC 7009 §2.2: 200 whether or not the token was known.
    await web.respond(send, 200, b"", web.NO_STORE)


async def _grant_of(authz: AuthorizationServer, token: str, client: Client) -> str | None:
    record = await authz.store.get("refresh", token_hash(token))
    if record is not None:
        return str(record["grant"]) if record["client_id"] == client.client_id else None
    try:
        principal = await IssuedTokens(authz, check_audience=False).verify(token)
    except InvalidToken:
        return None
    if principal.client_id != client.client_id:
        return None
    grant = principal.claims.get("grant_id")
    return grant if isinstance(grant, str) else None


class IssuedTokens:
    """The resource server's verifier for tokens this server issued: signature, issuer,
    audience (``check_audience``: one of its resources), expiry, and the grant still active
    (so that revocation and reuse detection reach access tokens too)."""

    def __init__(self, authz: AuthorizationServer, *, check_audience: bool = True) -> None:
        self.authz = authz
        self.audiences = authz.resources[:1] if check_audience else authz.resources

    async def verify(self, token: str) -> Principal:
        verifier = await self.authz.verifier_for(self.audiences)
        principal = await verifier.verify(token)
        grant = principal.claims.get("grant_id")
        if not isinstance(grant, str) or not await self.authz.store.grant_active(grant):
            raise InvalidToken("the token was revoked")
        return principal


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _basic_credentials(value: str | None) -> tuple[str, str] | None:
    if not value or not value.lower().startswith("basic "):
        return None
    from urllib.parse import unquote

    try:
        raw = base64.b64decode(value[6:].strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    user, sep, password = raw.partition(":")
    return (unquote(user), unquote(password)) if sep else None
