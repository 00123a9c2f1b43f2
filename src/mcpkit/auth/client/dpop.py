"""DPoP (RFC 9449): sender-constrained tokens.  One ES256 key per client instance; a fresh
proof (new ``jti``) for every request; server-supplied nonces remembered per origin."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["DpopKey"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _htu(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class DpopKey:
    """A DPoP proof-of-possession key and the nonces servers asked it to use."""

    alg = "ES256"

    def __init__(self, key: Any = None) -> None:
        from joserfc.jwk import ECKey

        self.key = key if key is not None else ECKey.generate_key("P-256", private=True)
        self.public_jwk = {k: v for k, v in self.key.as_dict(private=False).items() if k != "kid"}
        self.thumbprint: str = self.key.thumbprint()
        self._nonces: dict[str, str] = {}

    def remember_nonce(self, url: str, nonce: str | None) -> bool:
        """Store a ``DPoP-Nonce`` for ``url``'s origin; True when it changed."""
        if not nonce:
            return False
        origin = _origin(url)
        changed = self._nonces.get(origin) != nonce
        self._nonces[origin] = nonce
        return changed

    def nonce_for(self, url: str) -> str | None:
        return self._nonces.get(_origin(url))

    def proof(self, method: str, url: str, *, access_token: str | None = None) -> str:
        from joserfc import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": _htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        nonce = self.nonce_for(url)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self.key, algorithms=[self.alg])
