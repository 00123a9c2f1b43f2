"""Handles: server-minted names for state that lives between tool calls.

The 2026-07-28 revision has no sessions; a tool that creates something (a basket, a
search cursor, a sandbox) returns an opaque handle and later calls pass it back as an
ordinary argument.  A handle is a *name*, not a capability: it is bound to the caller's
authorization context and checked on every use, carries 192 bits of randomness, and
expires.  State lives in the server's state backend, so any replica resolves it.  An
unknown, expired or foreign handle raises :class:`HandleError`, which a tool call turns
into an ``isError`` result that says so.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from typing import Any

from ..runtime.listen import owner_key
from ..state.base import StateBackend
from .registry import ToolError

_PREFIX = re.compile(r"^[a-z][a-z0-9]{0,15}$")


class HandleError(ToolError):
    """The handle is unknown, expired or belongs to someone else."""


class Handles:
    __slots__ = ("backend", "owner")

    def __init__(self, backend: StateBackend, principal: object) -> None:
        self.backend = backend
        self.owner = owner_key(principal)

    def _key(self, handle: str) -> str:
        return f"handle:{handle}"

    async def mint(self, kind: str, data: object, ttl_s: float = 3600.0) -> str:
        """A fresh handle like ``bsk_Qm9...`` holding ``data`` (JSON) for ``ttl_s`` seconds."""
        if not _PREFIX.match(kind):
            raise ValueError("handle kinds are short lower-case words, e.g. 'bsk'")
        handle = f"{kind}_{secrets.token_urlsafe(24)}"
        record = {"owner": self.owner, "kind": kind, "data": data, "ttl": ttl_s}
        await self.backend.set_json(self._key(handle), record, ttl_s)
        return handle

    async def _record(self, handle: object, kind: str | None) -> dict[str, Any]:
        if not isinstance(handle, str) or "_" not in handle or len(handle) > 80:
            raise HandleError(f"Invalid handle: {handle!r}")
        record = await self.backend.get_json(self._key(handle))
        if record is None or record.get("owner") != self.owner:
            raise HandleError(f"Unknown or expired handle: {handle} (create a new one)")
        if kind is not None and record.get("kind") != kind:
            raise HandleError(f"Handle {handle} is not a {kind} handle")
        return record  # type: ignore[no-any-return]

    async def get(self, handle: str, kind: str | None = None) -> Any:
        return (await self._record(handle, kind))["data"]

    async def update(
        self, handle: str, change: Callable[[Any], Any], kind: str | None = None
    ) -> Any:
        """Atomically replace the data with ``change(data)``; returns the new data.  The
        expiry restarts (a handle in use stays alive)."""
        record = await self._record(handle, kind)

        def apply(old: Any) -> Any:
            if old is None or old.get("owner") != self.owner:
                raise HandleError(f"Unknown or expired handle: {handle} (create a new one)")
            old["data"] = change(old["data"])
            return old

        new = await self.backend.update_json(self._key(handle), apply, record.get("ttl"))
        return new["data"]

    async def drop(self, handle: str, kind: str | None = None) -> None:
        await self._record(handle, kind)
        await self.backend.delete(self._key(handle))
