"""The authorization server's signing keys: created, rotated and published (JWKS).

Keys live in the state backend under one record, so every replica signs with the same
current key and publishes the same set.  The newest key signs; a key older than
``rotate_after_s`` is replaced by a fresh one on the next signature, and retired keys stay
in the published set for ``retain_s`` more (long enough for every token they signed to
expire), then drop out.  Key generation, signing and the JWK format are joserfc's.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from ...state.base import StateBackend
from ...types.extras import require

__all__ = ["KEYS_KEY", "KeyRing"]

KEYS_KEY = "authserver:keys"


class KeyRing:
    """The ES256 keys of one issuer, on a state backend."""

    def __init__(self, backend: StateBackend, *, rotate_after_s: float, retain_s: float) -> None:
        if rotate_after_s <= 0 or retain_s <= 0:
            raise ValueError("key rotation and retention periods must be positive")
        self.backend = backend
        self.rotate_after_s = rotate_after_s
        self.retain_s = retain_s
        #: The last JWKS built, by the key ids it holds (the public halves never change).
        self._published: tuple[tuple[str, ...], dict[str, Any]] | None = None

    async def _records(self) -> list[dict[str, Any]]:
        """The stored keys, newest last, rotating first when the newest is due."""
        now = time.time()
        current = await self.backend.get_json(KEYS_KEY)
        records = current if isinstance(current, list) else []
        if records and now - float(records[-1]["created"]) < self.rotate_after_s:
            return records

        def rotate(old: Any) -> list[dict[str, Any]]:
            kept = old if isinstance(old, list) else []
            if kept and now - float(kept[-1]["created"]) < self.rotate_after_s:
                return kept  # another replica rotated first
            # A key retires when its successor is created; it stays published for
            # ``retain_s`` after that, while the tokens it signed are still valid.
            retired = [float(k["created"]) for k in kept[1:]] + ([now] if kept else [])
            kept = [k for k, end in zip(kept, retired, strict=True) if end >= now - self.retain_s]
            return [*kept, _new_key(now)]

        stored: list[dict[str, Any]] = await self.backend.update_json(KEYS_KEY, rotate)
        return stored

    async def signing_key(self) -> Any:
        """The joserfc key to sign with now (the newest)."""
        jwk = require("joserfc.jwk", "authserver", "the authorization server")
        records = await self._records()
        return jwk.ECKey.import_key(records[-1]["jwk"])

    async def public_jwks(self) -> dict[str, Any]:
        """The JWKS document: the public half of every key still in use."""
        jwk = require("joserfc.jwk", "authserver", "the authorization server")
        records = await self._records()
        kids = tuple(str(record["jwk"]["kid"]) for record in records)
        if self._published is not None and self._published[0] == kids:
            return self._published[1]
        keys = []
        for record in records:
            key = jwk.ECKey.import_key(record["jwk"])
            public = key.as_dict(private=False)
            public.update({"use": "sig", "alg": "ES256", "kid": record["jwk"]["kid"]})
            keys.append(public)
        self._published = (kids, {"keys": keys})
        return self._published[1]

    async def sign(self, claims: dict[str, Any], *, typ: str) -> str:
        """``claims`` as a compact JWS signed with the current key (``typ`` in the header)."""
        from joserfc import jwt

        key = await self.signing_key()
        header = {"alg": "ES256", "typ": typ, "kid": key.kid}
        return jwt.encode(header, claims, key)


def _new_key(now: float) -> dict[str, Any]:
    jwk = require("joserfc.jwk", "authserver", "the authorization server")
    key = jwk.ECKey.generate_key("P-256", parameters={"kid": secrets.token_urlsafe(12)})
    return {"created": now, "jwk": key.as_dict(private=True)}
