"""Access-token verifiers for the resource server.

* :class:`JwtVerifier` checks a JWT access token (RFC 9068) with joserfc: signature against
  the issuer's JWKS (fetched, cached, refreshed on an unknown ``kid`` at most every
  ``min_refresh_s``), ``iss`` equal to the configured issuer, ``aud`` containing this
  server's canonical URI, ``exp``/``nbf``/``iat`` with a small leeway, and an explicit
  algorithm allow-list (never ``none`` or HMAC against public keys).
* :class:`IntrospectionVerifier` asks the authorization server (RFC 7662) and caches the
  answer briefly; it checks ``active``, expiry, audience and (optionally) issuer.

Both return a :class:`~mcpkit.auth.principal.Principal` or raise :class:`InvalidToken`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import anyio
import httpx

from ..types.extras import require
from .principal import Principal
from .urls import require_secure_url

__all__ = [
    "DEFAULT_ALGORITHMS",
    "IntrospectionVerifier",
    "InvalidToken",
    "JwtVerifier",
    "TokenVerifier",
]

DEFAULT_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


class InvalidToken(Exception):
    """The token is missing, malformed, expired, or not meant for this server (HTTP 401)."""

    def __init__(self, description: str, *, error: str = "invalid_token") -> None:
        super().__init__(description)
        self.description = description
        self.error = error


@runtime_checkable
class TokenVerifier(Protocol):
    """Turns a bearer token into a :class:`~mcpkit.auth.Principal`, or raises
    :class:`~mcpkit.auth.InvalidToken`.  :class:`~mcpkit.auth.JwtVerifier` and
    :class:`~mcpkit.auth.IntrospectionVerifier` are the two shipped; any object with this
    ``verify`` coroutine will do."""

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` stands for; :class:`InvalidToken` when it is not valid here."""


def _audiences(value: str | Sequence[str]) -> tuple[str, ...]:
    out = (value,) if isinstance(value, str) else tuple(value)
    if not out or not all(isinstance(a, str) and a for a in out):
        raise ValueError("audience must be a non-empty string or list of strings")
    return out


def _aud_matches(aud: object, accepted: tuple[str, ...]) -> bool:
    if isinstance(aud, str):
        return aud in accepted
    if isinstance(aud, list):
        return any(isinstance(a, str) and a in accepted for a in aud)
    return False


def _subject(claims: Mapping[str, Any]) -> str | None:
    for name in ("sub", "client_id", "azp"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    if "scope" in claims:
        return Principal.scopes_from(claims["scope"])
    return Principal.scopes_from(claims.get("scp"))


def _client_id(claims: Mapping[str, Any]) -> str | None:
    for name in ("client_id", "azp"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _refuse_sender_constrained(claims: Mapping[str, Any]) -> None:
    """A token bound to a key (RFC 9449 ``cnf.jkt``, RFC 8705 ``cnf.x5t#S256``) is useless
    without proof of possession, which a Bearer request does not carry."""
    cnf = claims.get("cnf")
    if isinstance(cnf, dict) and cnf:
        raise InvalidToken("a sender-constrained token cannot be used as a bearer token")


class _Remote:
    """A verifier that asks the authorization server over HTTP (the JWKS, or the
    introspection endpoint): through the ``http_client`` it was given, else one of its own
    made on first use; :meth:`aclose` closes it."""

    _http: httpx.AsyncClient | None

    async def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=10.0, follow_redirects=False, trust_env=False)
        return self._http

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._http is not None:
            await self._http.aclose()


class JwtVerifier(_Remote):
    """Verify JWT access tokens issued by one authorization server for this resource."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Sequence[str],
        jwks_uri: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway_s: int = 60,
        token_types: Sequence[str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        jwks_ttl_s: float = 600.0,
        min_refresh_s: float = 30.0,
    ) -> None:
        if "none" in algorithms or any(a.startswith("HS") for a in algorithms):
            raise ValueError("JwtVerifier verifies with public keys: no 'none' or HS* algorithms")
        self.issuer = issuer
        self.audiences = _audiences(audience)
        self.jwks_uri = require_secure_url(jwks_uri, "jwks_uri") if jwks_uri else None
        self.algorithms = tuple(algorithms)
        self.leeway_s = leeway_s
        self.token_types = tuple(t.lower() for t in token_types) if token_types else None
        self.jwks_ttl_s = jwks_ttl_s
        self.min_refresh_s = min_refresh_s
        self._http = http_client
        self._keys: Any = None  # joserfc KeySet
        self._static = jwks is not None
        self._fetched_at = 0.0
        self._lock = anyio.Lock()
        if jwks is not None:
            self._keys = self._import(jwks)

    @staticmethod
    def _import(jwks: Mapping[str, Any]) -> Any:
        jwk = require("joserfc.jwk", "auth", "JWT verification")
        return jwk.KeySet.import_key_set(dict(jwks))

    # ------------------------------------------------------------------ keys
    async def _discover_jwks_uri(self) -> str:
        from .client.metadata import as_metadata_urls

        try:
            require_secure_url(self.issuer, "issuer")
        except ValueError as exc:
            raise InvalidToken(str(exc)) from None
        client = await self._client()
        for url in as_metadata_urls(self.issuer):
            response = await client.get(url, headers={"Accept": "application/json"})
            if response.status_code != 200:
                continue
            data = response.json()
            if not isinstance(data, dict) or data.get("issuer") != self.issuer:
                raise InvalidToken("authorization server metadata names another issuer")
            uri = data.get("jwks_uri")
            if isinstance(uri, str):
                return require_secure_url(uri, "jwks_uri")
        raise InvalidToken("cannot find the issuer's jwks_uri")

    async def _refresh(self, *, force: bool) -> None:
        if self._static:
            return
        async with self._lock:
            now = time.monotonic()
            fresh = self._keys is not None and now - self._fetched_at < self.jwks_ttl_s
            if fresh and not force:
                return
            if force and now - self._fetched_at < self.min_refresh_s and self._keys is not None:
                return  # an unknown kid must not make us hammer the JWKS endpoint
            if self.jwks_uri is None:
                self.jwks_uri = await self._discover_jwks_uri()
            client = await self._client()
            try:
                response = await client.get(self.jwks_uri, headers={"Accept": "application/json"})
                response.raise_for_status()
                self._keys = self._import(response.json())
            except Exception as exc:
                if self._keys is None:
                    raise InvalidToken(f"cannot load the issuer's keys: {exc}") from None
                return  # keep serving with the keys we have
            self._fetched_at = now

    # ------------------------------------------------------------------ verify
    async def verify(self, token: str) -> Principal:
        """Check the JWT's signature against the issuer's JWKS, then its claims; the principal
        it stands for, or :class:`InvalidToken` saying what is wrong."""
        from joserfc.errors import JoseError
        from joserfc.jws import extract_compact

        try:
            header = extract_compact(token.encode("ascii")).headers()
        except (JoseError, ValueError, UnicodeError):
            raise InvalidToken("the access token is not a JWT") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidToken(f"token algorithm {alg!r} is not accepted")
        if self.token_types is not None:
            typ = str(header.get("typ", "")).lower()
            if typ not in self.token_types and f"application/{typ}" not in self.token_types:
                raise InvalidToken(f"token type {header.get('typ')!r} is not accepted")
        await self._refresh(force=False)
        kid = header.get("kid")
        key = self._find_key(kid)
        if key is None:
            await self._refresh(force=True)
            key = self._find_key(kid)
        if key is None:
            raise InvalidToken("the token was signed with an unknown key")
        claims = self._decode(token, key)
        return self._principal(claims)

    def _find_key(self, kid: Any) -> Any:
        from joserfc.errors import JoseError

        if self._keys is None:
            return None
        try:
            return self._keys.get_by_kid(kid if isinstance(kid, str) else None)
        except JoseError:
            return None

    def _decode(self, token: str, key: Any) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import ExpiredTokenError, JoseError

        try:
            decoded = jwt.decode(token, key, algorithms=list(self.algorithms))
        except JoseError:
            raise InvalidToken("the token signature is invalid") from None
        except ValueError:
            raise InvalidToken("the token is malformed") from None
        claims = decoded.claims
        registry = jwt.JWTClaimsRegistry(
            leeway=self.leeway_s,
            iss={"essential": True, "value": self.issuer},
            exp={"essential": True},
            aud={"essential": True},
        )
        try:
            registry.validate(claims)
        except ExpiredTokenError:
            raise InvalidToken("the token has expired") from None
        except JoseError as exc:
            claim = getattr(exc, "claim", None) or str(exc)
            if "iss" in str(claim):
                raise InvalidToken("the token was issued by another authorization server") from None
            raise InvalidToken(f"the token is not acceptable ({claim})") from None
        if not _aud_matches(claims.get("aud"), self.audiences):
            raise InvalidToken("the token was issued for another resource (audience)")
        return claims

    def _principal(self, claims: dict[str, Any]) -> Principal:
        _refuse_sender_constrained(claims)
        subject = _subject(claims)
        if subject is None:
            raise InvalidToken("the token names no subject")
        exp = claims.get("exp")
        return Principal(
            subject=subject,
            scopes=_scopes(claims),
            claims=claims,
            client_id=_client_id(claims),
            issuer=self.issuer,
            expires_at=float(exp) if isinstance(exp, (int, float)) else None,
        )


class IntrospectionVerifier(_Remote):
    """Ask the authorization server whether a token is active (RFC 7662)."""

    def __init__(
        self,
        endpoint: str,
        *,
        audience: str | Sequence[str],
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        auth_method: str = "client_secret_basic",
        require_audience: bool = True,
        cache_ttl_s: float = 60.0,
        max_cache: int = 10_000,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if auth_method not in ("client_secret_basic", "client_secret_post", "none"):
            raise ValueError("auth_method: client_secret_basic, client_secret_post or none")
        self.endpoint = require_secure_url(endpoint, "introspection endpoint")
        self.audiences = _audiences(audience)
        self.client_id = client_id
        self.client_secret = client_secret
        self.issuer = issuer
        self.auth_method = auth_method
        self.require_audience = require_audience
        self.cache_ttl_s = cache_ttl_s
        self.max_cache = max_cache
        self._http = http_client
        self._cache: dict[str, tuple[float, Principal]] = {}

    async def verify(self, token: str) -> Principal:
        """Ask the introspection endpoint (answers cached briefly, by the token's hash); the
        principal, or :class:`InvalidToken` for an inactive, expired or foreign token."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        now = time.time()
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > now:
            principal = cached[1]
            if principal.expires_at is None or principal.expires_at > now:
                return principal
        principal = await self._introspect(token)
        until = now + self.cache_ttl_s
        if principal.expires_at is not None:
            until = min(until, principal.expires_at)
        if len(self._cache) >= self.max_cache:
            self._cache.clear()
        self._cache[digest] = (until, principal)
        return principal

    async def _introspect(self, token: str) -> Principal:
        from .client.clientauth import basic_authorization

        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"Accept": "application/json"}
        if self.client_id is not None:
            if self.auth_method == "client_secret_basic" and self.client_secret is not None:
                headers["Authorization"] = basic_authorization(self.client_id, self.client_secret)
            else:
                form["client_id"] = self.client_id
                if self.auth_method == "client_secret_post" and self.client_secret is not None:
                    form["client_secret"] = self.client_secret
        client = await self._client()
        try:
            response = await client.post(self.endpoint, data=form, headers=headers)
        except httpx.HTTPError as exc:
            raise InvalidToken(f"token introspection failed: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise InvalidToken(f"token introspection failed (HTTP {response.status_code})")
        try:
            data = response.json()
        except ValueError:
            raise InvalidToken("token introspection returned no JSON") from None
        if not isinstance(data, dict) or data.get("active") is not True:
            raise InvalidToken("the token is not active")
        exp = data.get("exp")
        if isinstance(exp, (int, float)) and exp <= time.time():
            raise InvalidToken("the token has expired")
        if self.issuer is not None and data.get("iss", self.issuer) != self.issuer:
            raise InvalidToken("the token was issued by another authorization server")
        aud = data.get("aud")
        if aud is None:
            if self.require_audience:
                raise InvalidToken("the introspection answer names no audience")
        elif not _aud_matches(aud, self.audiences):
            raise InvalidToken("the token was issued for another resource (audience)")
        _refuse_sender_constrained(data)
        subject = _subject(data)
        if subject is None:
            raise InvalidToken("the token names no subject")
        return Principal(
            subject=subject,
            scopes=_scopes(data),
            claims=data,
            client_id=_client_id(data),
            issuer=data.get("iss") if isinstance(data.get("iss"), str) else self.issuer,
            expires_at=float(exp) if isinstance(exp, (int, float)) else None,
        )
