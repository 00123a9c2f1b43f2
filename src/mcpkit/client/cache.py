"""A cache for results that say how long they stay fresh (2026-07-28, SEP-2549).

``server/discover``, the four list methods and ``resources/read`` carry ``ttlMs`` and
``cacheScope`` on complete results.  Rules kept here:

* absent, non-numeric or negative ``ttlMs`` counts as 0: not cached (so legacy results,
  which have no ``ttlMs``, are never cached);
* the key is the method plus the params that change the result (cursor, uri);
* ``private`` entries belong to one client (its *owner* token) and are never served to
  another; ``public`` entries may be shared by every client of the same server that uses
  the same cache object (a host with many clients, a gateway);
* change notifications invalidate: ``list_changed`` drops that list (every page),
  ``resources/updated`` drops that resource's contents;
* bounded: least recently used entries go first.

Results that asked for input (MRTR) and retries carrying ``inputResponses`` are never
offered to the cache by the client.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

_Key = tuple[str, object, str, str]

#: Which cached methods each change notification makes stale.
INVALIDATES: dict[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


def ttl_seconds(result: dict[str, Any]) -> float:
    ttl = result.get("ttlMs")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
        return 0.0
    return float(ttl) / 1000.0


class ResultCache:
    """TTL- and scope-aware result cache; may be shared between clients."""

    def __init__(self, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic):
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[_Key, tuple[float, dict[str, Any]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def lookup(self, server: str, owner: object, method: str, key: str) -> dict[str, Any] | None:
        """A fresh cached result for this request, or None; ``owner``'s private entries first,
        then public ones."""
        now = self.clock()
        for scope_owner in (owner, None):
            entry_key = (server, scope_owner, method, key)
            entry = self._entries.get(entry_key)
            if entry is None:
                continue
            expires, result = entry
            if expires <= now:
                del self._entries[entry_key]
                continue
            self._entries.move_to_end(entry_key)
            self.hits += 1
            return result
        self.misses += 1
        return None

    def store(
        self, server: str, owner: object, method: str, key: str, result: dict[str, Any]
    ) -> None:
        """Keep a complete result for its ``ttlMs`` (nothing is kept without one), private to
        ``owner`` unless its ``cacheScope`` is ``public``."""
        ttl = ttl_seconds(result)
        if ttl <= 0 or result.get("resultType", "complete") != "complete":
            return
        scope_owner = None if result.get("cacheScope") == "public" else owner
        entry_key = (server, scope_owner, method, key)
        self._entries[entry_key] = (self.clock() + ttl, result)
        self._entries.move_to_end(entry_key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def invalidate(self, server: str, method: str | None = None, key: str | None = None) -> int:
        """Drop entries of ``server`` (optionally one method, optionally one key)."""
        doomed = [
            k
            for k in self._entries
            if k[0] == server
            and (method is None or k[2] == method)
            and (key is None or k[3] == key)
        ]
        for entry_key in doomed:
            del self._entries[entry_key]
        return len(doomed)

    def on_notification(self, server: str, method: str, params: dict[str, Any]) -> None:
        """Apply a server notification's invalidation rule."""
        for stale in INVALIDATES.get(method, ()):
            self.invalidate(server, stale)
        if method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            self.invalidate(server, "resources/read", params["uri"])

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
