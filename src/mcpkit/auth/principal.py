"""Who made a request: the identity an access token stands for.

A :class:`Principal` is what handlers see as ``ctx.principal``.  Its identity is the
triple (issuer, client_id, subject); scopes, claims and expiry describe the *token* and may
change when the client steps up or refreshes, so they take no part in equality.  Legacy
sessions, tasks and handles bind to a principal by ``==`` and ``str()``, which therefore
use that identity only (a session survives a refreshed or stepped-up token).

The raw access token is deliberately not kept here: nothing downstream of the resource
server can forward it (no token passthrough).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Principal"]


@dataclass(frozen=True, eq=False, slots=True)
class Principal:
    """The caller an access token stands for.  Equality and ``str()`` use the identity
    (issuer, client_id, subject) only; scopes, claims and expiry describe the token."""

    subject: str
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    client_id: str | None = None
    issuer: str | None = None
    expires_at: float | None = None

    @property
    def key(self) -> str:
        """A stable, injective identity string (issuer, client, subject)."""
        return json.dumps([self.issuer, self.client_id, self.subject], separators=(",", ":"))

    def has_scopes(self, scopes: Iterable[str]) -> bool:
        """True when the token grants every one of ``scopes``."""
        return set(scopes) <= self.scopes

    def missing_scopes(self, scopes: Iterable[str]) -> list[str]:
        """The scopes of ``scopes`` the token does not grant, in the order asked."""
        return [s for s in scopes if s not in self.scopes]

    def __str__(self) -> str:
        return self.key

    def __repr__(self) -> str:
        scopes = " ".join(sorted(self.scopes))
        return (
            f"Principal(subject={self.subject!r}, client_id={self.client_id!r}, "
            f"issuer={self.issuer!r}, scopes={scopes!r})"
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Principal):
            return self.key == other.key
        if isinstance(other, str):  # a principal restored from shared state is its key
            return self.key == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.key)

    @staticmethod
    def scopes_from(value: object) -> frozenset[str]:
        """Scopes from a ``scope`` string (RFC 9068/7662) or a ``scp`` list."""
        if isinstance(value, str):
            return frozenset(value.split())
        if isinstance(value, (list, tuple)):
            return frozenset(s for s in value if isinstance(s, str) and s)
        return frozenset()
