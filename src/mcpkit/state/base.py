"""The state backend interface and the URL that picks an implementation.

Values are bytes; expiry is enforced by the backend (a key past its TTL reads as absent
everywhere).  ``cas`` (compare-and-set) is the one concurrency primitive: every
read-modify-write of shared state (a task record touched by its worker, by
``tasks/update`` and by ``tasks/cancel`` on other replicas) goes through it, so no update
is lost.  ``publish``/``subscribe`` carry small events between processes (list_changed
fan-out, task wake-ups).
"""

from __future__ import annotations

import abc
import contextlib
import logging
import os
import random
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio

from ..types.codec import decode, encode
from ..types.errors import STATE_UNAVAILABLE as STATE_UNAVAILABLE
from ..types.errors import StateUnavailable as StateUnavailable

log = logging.getLogger("mcpkit.state")

#: The first retry of a conflicting ``update_json`` waits below this; each loss doubles it.
_BACKOFF_BASE_S = 0.001
#: The most one retry waits (49 waits between 50 lost attempts: about 5 s on average).
_BACKOFF_CAP_S = 0.25


class StateLocationError(OSError):
    """The state store's location cannot be used (a folder that cannot be created, a
    database file that cannot be opened); the message is one line naming the path."""


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def default_state_dir(server_name: str) -> Path:
    """The folder of a server's own state: the per-user data directory (platformdirs:
    ``$XDG_DATA_HOME/mcpkit`` or ``~/.local/share/mcpkit`` on Linux, ``~/Library/Application
    Support/mcpkit`` on macOS, ``%LOCALAPPDATA%\\mcpkit`` on Windows), then
    ``servers/<name>`` (the name made safe for a file name)."""
    from platformdirs import user_data_dir

    safe = _UNSAFE_NAME.sub("_", server_name).strip("._")[:64] or "server"
    return Path(user_data_dir("mcpkit", appauthor=False)) / "servers" / safe


def make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and each missing parent readable by this user alone (0700);
    folders that exist are left as they are.  Raises :class:`StateLocationError`."""
    missing: list[Path] = []
    current = folder
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    try:
        for path in reversed(missing):
            with contextlib.suppress(FileExistsError):  # another process was first
                os.mkdir(path, 0o700)
    except OSError as exc:
        raise StateLocationError(f"cannot create {folder}: {exc.strerror or exc}") from None


class StateBackend(abc.ABC):
    """Where shared state lives (memory, SQLite or Redis; :func:`open_backend` picks one by
    URL): bytes under keys with expiry, ``cas`` for every read-modify-write, and pub/sub for
    small events between processes."""

    url: str = ""
    #: The kind of store, as errors and probes name it (never the URL).
    kind: str = "memory"

    @abc.abstractmethod
    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None when absent or expired."""

    @abc.abstractmethod
    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        """Store ``value`` under ``key``, expiring after ``ttl_s`` seconds (None: never)."""

    @abc.abstractmethod
    async def add(self, key: str, value: bytes, ttl_s: float | None = None) -> bool:
        """Set only if absent; True when this call created the key."""

    @abc.abstractmethod
    async def cas(
        self, key: str, expected: bytes | None, value: bytes | None, ttl_s: float | None = None
    ) -> bool:
        """Replace ``expected`` (None: absent) with ``value`` (None: delete) atomically."""

    @abc.abstractmethod
    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""

    @abc.abstractmethod
    async def publish(self, channel: str, data: bytes) -> None:
        """Send ``data`` to every subscriber of ``channel``, in any process."""

    @abc.abstractmethod
    def subscribe(
        self, channel: str
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        """Messages published on ``channel`` from now on, from any process."""

    async def aclose(self) -> None:
        """Release connections and files; the backend is not used after this."""
        return None

    async def ping(self) -> bool:
        """Whether the store answers now (readiness probes); never raises."""
        return True

    async def reap_expired(self, limit: int = 500) -> int:
        """Delete at most ``limit`` records past their TTL; how many were deleted.

        Expired records already read as absent; this only gives their space back.  A
        backend whose store expires keys itself (Redis) has nothing to do.  Small batches
        keep each call short: :func:`mcpkit.state.reaper.reap_all` loops over them and lets
        requests run between two."""
        return 0

    def change_token(self) -> object | None:
        """A value that differs after any write to the store, by any process; None when
        the backend cannot tell cheaply (then a caller reads every time).  It lets a
        process keep using a record it read while nothing at all was written since (the
        caller still bounds how long, and minds the record's own expiry)."""
        return None

    # ---- lists of the newest ids (a principal's tasks)
    async def remember_recent(
        self, key: str, item: str, keep: int, ttl_s: float | None = None
    ) -> None:
        """Add ``item`` last to the list under ``key`` (moved there if it is in it
        already), keep the newest ``keep``, and expire the list ``ttl_s`` after this change.

        Many writers of one list at once all get through.  This default is a
        read-modify-write (:meth:`update_json`); Redis does it in one transaction, with no
        retries.  Read the list with :meth:`recent`, never as a plain value (a backend may
        store it in another form)."""

        def add(items: Any) -> Any:
            kept = [i for i in items or [] if i != item]
            return [*kept, item][-keep:]

        await self.update_json(key, add, ttl_s)

    async def recent(self, key: str) -> list[str]:
        """The list :meth:`remember_recent` keeps under ``key``, oldest first ([] when none)."""
        return list(await self.get_json(key) or [])

    # ---- JSON conveniences
    async def get_json(self, key: str) -> Any:
        """The JSON value under ``key`` (decoded with the one codec), or None."""
        raw = await self.get(key)
        return None if raw is None else decode(raw)

    async def set_json(self, key: str, value: object, ttl_s: float | None = None) -> None:
        """Store a JSON value under ``key`` (encoded with the one codec)."""
        await self.set(key, encode(value), ttl_s)

    async def update_json(
        self,
        key: str,
        change: Callable[[Any], Any],
        ttl_s: float | None = None,
        attempts: int = 50,
    ) -> Any:
        """Read-modify-write with retries: ``change(old) -> new`` (None deletes, raising
        aborts).  Returns the stored new value; :class:`StateUnavailable` ("busy", HTTP
        503: retry later) when other writers won ``attempts`` times in a row.

        A lost ``cas`` means another writer changed the key meanwhile; before the next try
        this one waits a random time below a ceiling that doubles per loss (up to
        ``_BACKOFF_CAP_S``), so writers of one hot key (every task a principal creates
        adds to its index) spread out instead of colliding again in lockstep."""
        for attempt in range(attempts):
            raw = await self.get(key)
            old = None if raw is None else decode(raw)
            new = change(old)
            new_raw = None if new is None else encode(new)
            if await self.cas(key, raw, new_raw, ttl_s):
                return new
            if attempt + 1 < attempts:  # (no wait after the last loss: it answers "busy")
                ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
                await anyio.sleep(random.uniform(0, ceiling))
        log.warning("state update of %r lost %d times in a row to other writers", key, attempts)
        raise StateUnavailable(self.kind, "busy")


def open_backend(url: str) -> StateBackend:
    """``memory:``, ``sqlite:///relative.db`` / ``sqlite:////abs/path.db``, ``redis://...``.

    A SQLite file is opened now: a location that cannot be used raises
    :class:`StateLocationError` (one line, naming it)."""
    if url in ("memory:", "memory://", "memory"):
        from .memory import MemoryBackend

        return MemoryBackend()
    if url.startswith("sqlite:"):
        from .sqlite import SQLiteBackend

        path = url[len("sqlite:") :]
        if path.startswith("///"):
            path = path[3:]
        elif path.startswith("//"):
            path = path[2:]
        if not path:
            raise ValueError("sqlite: needs a file: sqlite:///relative.db or sqlite:////abs.db")
        return SQLiteBackend(path)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis import RedisBackend

        return RedisBackend(url)
    raise ValueError(
        f"unknown state backend URL {url!r} (use memory:, sqlite:///file.db, redis://)"
    )
