"""What the gateway seals for one caller and one upstream: connections and connect links.

* :class:`Connections` — each caller's tokens for each upstream in the gateway's state
  backend, sealed with the server keyring for that principal and upstream (AES-GCM, the
  principal and upstream the additional data): nothing in Redis or SQLite reads as a
  token, and a record copied to another principal's key does not open.
* the connect link (:func:`connect_link`, :func:`redeem_link`) — a one-use token,
  sealed with the keyring for that principal and upstream, valid ``LINK_TTL_S``.  A
  request that presents the caller's bearer credentials must be that principal's; a
  link used once is refused the second time.

How they are used (per-user upstream auth, the ``/connect`` pages) is in :mod:`.connect`.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from ..auth.client import TokenSet
from ..protocol.sealing import InvalidState, Keyring
from ..state.base import StateBackend
from ..types.codec import decode, encode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .config import UpstreamOAuth

__all__ = [
    "LINK_TTL_S",
    "Completion",
    "Connection",
    "Connections",
    "LinkRefused",
    "Redeemed",
    "Sealed",
    "Sealing",
    "connect_link",
    "redeem_link",
]

log = logging.getLogger("mcpkit.gateway")

#: How long a connect link opens, and how long a started sign-in waits for its callback.
LINK_TTL_S = 600.0
#: How long a stored connection opens (its refresh token may outlive the access token).
CONNECTION_TTL_S = 365 * 24 * 3600.0
_LINK_BINDING = "mcpkit-gateway-connect-link\0"
_CONNECTION_BINDING = "mcpkit-gateway-connection\0"
_CONNECTION_KEY = "gateway-connection:"
_USED_LINK_KEY = "gateway-connect-used:"


class Sealed(Protocol):
    """Where the keyring and the state backend come from (the running gateway server)."""

    @property
    def keyring(self) -> Keyring: ...

    @property
    def state(self) -> StateBackend: ...


@dataclass(frozen=True, slots=True)
class Sealing:
    """A keyring and a state backend as such a source (outside a running gateway)."""

    keyring: Keyring
    state: StateBackend


@dataclass(frozen=True, slots=True)
class Connection:
    """One caller's account at one upstream."""

    upstream: str
    tokens: TokenSet
    connected_at: float

    def describe(self) -> dict[str, Any]:
        """What the caller may see of it (never a token)."""
        return {
            "upstream": self.upstream,
            "connectedAt": int(self.connected_at),
            "expiresAt": int(self.tokens.expires_at) if self.tokens.expires_at else None,
            "scopes": list(self.tokens.scopes),
            "refreshable": bool(self.tokens.refresh_token),
        }


def _binding(principal: str, upstream: str) -> str:
    return f"{_CONNECTION_BINDING}{principal}\0{upstream}"


class Connections:
    """Callers' sealed tokens per upstream in the state backend."""

    def __init__(self, source: Sealed) -> None:
        self.source = source

    @staticmethod
    def key(principal: str, upstream: str) -> str:
        """The record's key: a hash, so the backend does not list who connected what."""
        digest = hashlib.sha256(f"{principal}\0{upstream}".encode()).hexdigest()
        return _CONNECTION_KEY + digest

    async def get(self, principal: str, upstream: str) -> Connection | None:
        raw = await self.source.state.get(self.key(principal, upstream))
        if raw is None:
            return None
        try:
            sealed = decode(raw)
            body = self.source.keyring.open(sealed, _binding(principal, upstream))
            tokens = TokenSet.from_dict(body["tokens"])
            return Connection(upstream, tokens, float(body["at"]))
        except (InvalidState, KeyError, TypeError, ValueError):
            log.warning("a stored connection to %r does not open: ignored", upstream)
            return None

    async def put(self, principal: str, upstream: str, tokens: TokenSet) -> None:
        body = {"tokens": tokens.to_dict(), "at": time.time()}
        sealed = self.source.keyring.seal(body, _binding(principal, upstream), CONNECTION_TTL_S)
        await self.source.state.set(
            self.key(principal, upstream), encode(sealed), ttl_s=CONNECTION_TTL_S
        )

    async def delete(self, principal: str, upstream: str) -> bool:
        return await self.source.state.delete(self.key(principal, upstream))

    async def of(self, principal: str, upstreams: Sequence[str]) -> list[Connection]:
        """The caller's connections among ``upstreams``."""
        found = [await self.get(principal, name) for name in upstreams]
        return [c for c in found if c is not None]


# ---------------------------------------------------------------------------- links


@dataclass(frozen=True, slots=True)
class Completion:
    """Whom to tell when a sign-in finished: a 2025-11-25 session and the
    ``elicitationId`` it was asked with."""

    session_id: str
    elicitation_id: str


def connect_link(
    keyring: Keyring,
    oauth: UpstreamOAuth,
    upstream: str,
    principal: str,
    completion: Completion | None = None,
) -> str:
    """A one-use, short-lived URL of the connect page, sealed for ``principal`` (and the
    session to tell when the sign-in finished, if any)."""
    body: dict[str, Any] = {"p": principal, "n": secrets.token_urlsafe(16)}
    if completion is not None:
        body["s"], body["e"] = completion.session_id, completion.elicitation_id
    sealed = keyring.seal(body, _LINK_BINDING + upstream, LINK_TTL_S)
    return f"{oauth.public_url}/connect/{quote(upstream, safe='')}?link={sealed}"


class LinkRefused(Exception):
    """A connect link that does not open, is used up, or is another caller's."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class Redeemed:
    """What a redeemed link was made for."""

    principal: str
    completion: Completion | None


async def redeem_link(
    source: Sealed, upstream: str, link: str | None, caller: str | None
) -> Redeemed:
    """The principal a link was made for (and whom to tell at the end), marked used.
    ``caller``: who presented it, when the request carried credentials (must be the
    link's principal)."""
    try:
        body = source.keyring.open(link, _LINK_BINDING + upstream)
        principal, nonce = str(body["p"]), str(body["n"])
    except (InvalidState, KeyError):
        raise LinkRefused(400, "this connect link is not valid (expired or altered)") from None
    if caller is not None and caller != principal:
        raise LinkRefused(403, "this connect link was made for another caller")
    if not await source.state.add(_USED_LINK_KEY + nonce, b"1", ttl_s=LINK_TTL_S):
        raise LinkRefused(409, "this connect link was used already; call the tool again")
    session, elicitation = body.get("s"), body.get("e")
    completion = None
    if isinstance(session, str) and isinstance(elicitation, str):
        completion = Completion(session, elicitation)
    return Redeemed(principal, completion)
