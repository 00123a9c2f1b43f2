"""Who is calling: static bearer tokens or JWTs verified against a JWKS (joserfc).

The result is a :class:`~mcpkit.gateway.policy.Principal`.  A missing, unknown, expired or
otherwise invalid token is refused before the body is read: HTTP 401 with
``WWW-Authenticate: Bearer`` and a JSON-RPC error body the client can show.  The token is
used here only; it is never forwarded to an upstream.
"""

from __future__ import annotations

import hmac
import time
from pathlib import Path
from typing import Any

import anyio

from ..transports.http.asgi import Rejection
from ..types.codec import decode
from ..types.errors import McpError
from .config import AuthConfig
from .policy import ANONYMOUS, Principal

UNAUTHENTICATED = -31001
JWKS_REFRESH_S = 300.0


def _challenge(error: str, description: str) -> Rejection:
    header = f'Bearer realm="mcp", error="{error}", error_description="{description}"'
    return Rejection(
        401,
        McpError(UNAUTHENTICATED, f"Unauthorized: {description}"),
        [(b"www-authenticate", header.encode())],
    )


class GatewayAuthenticator:
    def __init__(self, config: AuthConfig, base_dir: Path | None = None) -> None:
        self.config = config
        self.base_dir = base_dir or Path.cwd()
        self._keys: Any = None
        self._keys_at = 0.0
        self._lock = anyio.Lock()

    async def __call__(self, scope: Any, headers: dict[str, str]) -> Principal:
        if self.config.mode == "none":
            return ANONYMOUS
        value = headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _challenge("invalid_request", "a Bearer token is required")
        token = token.strip()
        if self.config.mode == "bearer":
            for known, who in self.config.tokens.items():
                if hmac.compare_digest(known.encode(), token.encode()):
                    return Principal(who["principal"], tuple(who.get("groups", ())))
            raise _challenge("invalid_token", "unknown token")
        return await self._jwt(token)

    async def _keyset(self, refresh: bool = False) -> Any:
        from joserfc.jwk import KeySet

        async with self._lock:
            if (
                self._keys is not None
                and not refresh
                and time.monotonic() - self._keys_at < JWKS_REFRESH_S
            ):
                return self._keys
            if self.config.jwks_file:
                path = Path(self.config.jwks_file)
                if not path.is_absolute():
                    path = self.base_dir / path
                data = decode(path.read_bytes())
            else:
                import httpx

                async with httpx.AsyncClient(timeout=10) as client:
                    response = await client.get(str(self.config.jwks_url))
                    response.raise_for_status()
                    data = response.json()
            self._keys = KeySet.import_key_set(data)
            self._keys_at = time.monotonic()
            return self._keys

    async def _jwt(self, token: str) -> Principal:
        from joserfc import jwt
        from joserfc.errors import JoseError

        try:
            keys = await self._keyset()
            try:
                decoded = jwt.decode(token, keys)
            except JoseError:
                decoded = jwt.decode(token, await self._keyset(refresh=True))  # rotated keys
            claims = decoded.claims
            options: dict[str, Any] = {"exp": {"essential": True}}
            if self.config.issuer:
                options["iss"] = {"essential": True, "value": self.config.issuer}
            if self.config.audience:
                options["aud"] = {"essential": True, "value": self.config.audience}
            jwt.JWTClaimsRegistry(leeway=30, **options).validate(claims)
        except (JoseError, ValueError) as exc:
            raise _challenge("invalid_token", _describe(exc)) from None
        subject = claims.get(self.config.principal_claim)
        if not isinstance(subject, str) or not subject:
            raise _challenge(
                "invalid_token", f"the token has no {self.config.principal_claim!r} claim"
            )
        groups = claims.get(self.config.groups_claim) or ()
        if isinstance(groups, str):
            groups = groups.split()
        return Principal(subject, tuple(str(g) for g in groups), dict(claims))


def _describe(exc: Exception) -> str:
    name = type(exc).__name__
    if "Expired" in name:
        return "the token has expired"
    if "InvalidClaim" in name or "MissingClaim" in name:
        return f"invalid claim: {getattr(exc, 'description', exc)}"
    return "the token could not be verified"
