"""The authorization server's records on a state backend.

Every key starts with ``authserver:``.  Records that a second use must not see twice
(authorization codes, refresh tokens, upstream transactions) change state with ``cas``,
so that of two racing requests, on one replica or many, exactly one wins.

* ``client:{id}``: a registered client (no expiry);
* ``request:{id}``: an authorization request waiting for consent and sign-in;
* ``tx:{state}``: a trip to the upstream provider, taken once by its callback;
* ``code:{code}``: an authorization code; on use it is marked used (not deleted) so that a
  replay is recognised and revokes what the first use issued;
* ``grant:{id}``: one sign-in's family of tokens, revoked as a whole;
* ``refresh:{sha256}``: a refresh token (only its hash is stored); marked used on rotation.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...state.base import StateBackend
from ...types.codec import decode, encode

__all__ = ["Store"]

PREFIX = "authserver:"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class _Inactive(Exception):
    """The grant is revoked or gone (aborts an update)."""


class Store:
    """Typed access to the records above."""

    def __init__(self, backend: StateBackend) -> None:
        self.backend = backend

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        value = await self.backend.get_json(f"{PREFIX}{kind}:{key}")
        return value if isinstance(value, dict) else None

    async def put(self, kind: str, key: str, record: dict[str, Any], ttl_s: float | None) -> None:
        await self.backend.set_json(f"{PREFIX}{kind}:{key}", record, ttl_s)

    async def take(self, kind: str, key: str) -> dict[str, Any] | None:
        """The record, deleted in the same step; None when absent or another caller took it."""
        full = f"{PREFIX}{kind}:{key}"
        raw = await self.backend.get(full)
        if raw is None or not await self.backend.cas(full, raw, None):
            return None
        value = decode(raw)
        return value if isinstance(value, dict) else None

    async def mark_used(
        self, kind: str, key: str, ttl_s: float
    ) -> tuple[dict[str, Any] | None, bool]:
        """``(record, first)``: the record, and whether this call is the one that marked it
        used (False: it was used before, or another caller won the race)."""
        full = f"{PREFIX}{kind}:{key}"
        raw = await self.backend.get(full)
        if raw is None:
            return None, False
        record = decode(raw)
        if not isinstance(record, dict):
            return None, False
        if record.get("used"):
            return record, False
        won = await self.backend.cas(full, raw, encode({**record, "used": True}), ttl_s)
        return record, won

    async def start_grant(self, grant_id: str, ttl_s: float) -> bool:
        """Open a grant; False when its id is taken (a replayed code revoked it first)."""
        return await self.backend.add(
            f"{PREFIX}grant:{grant_id}", encode({"revoked": False}), ttl_s
        )

    async def extend_grant(self, grant_id: str, ttl_s: float) -> bool:
        """Keep an active grant for ``ttl_s`` more; False when it is revoked or gone (a
        revocation racing this call wins: the update is a compare-and-set)."""

        def keep(old: Any) -> Any:
            if not isinstance(old, dict) or old.get("revoked") is not False:
                raise _Inactive
            return old

        try:
            await self.backend.update_json(f"{PREFIX}grant:{grant_id}", keep, ttl_s)
        except _Inactive:
            return False
        return True

    async def revoke_grant(self, grant_id: str, ttl_s: float) -> None:
        await self.put("grant", grant_id, {"revoked": True}, ttl_s)

    async def grant_active(self, grant_id: str) -> bool:
        record = await self.get("grant", grant_id)
        return record is not None and record.get("revoked") is False
