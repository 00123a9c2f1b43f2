"""SQLite backend: the embedded default.  Several processes on one machine share one file.

Writes go through SQLite's own locking (WAL mode, busy timeout), so ``cas`` is atomic
across processes.  Pub/sub is an append-only ``events`` table that each process polls
(one poller per backend, every :data:`POLL_S` at most) and prunes; that is plenty for
list_changed and task wake-ups, and needs no daemon.  Calls run in a worker thread so a
slow disk never stalls the event loop.

An idle poller costs next to nothing: every commit, by any connection in any process,
writes to the database's write-ahead log, so the poller reads the events table only when
the log's size or modification time changed since its last read (one ``stat`` per tick in
the loop's thread), and every :data:`IDLE_POLL_S` regardless (file systems with coarse
modification times).  While nothing changes, its ticks space out from :data:`POLL_S` to
:data:`IDLE_TICK_MAX_S` (a wake-up of an idle process is what costs on a VM); a change
brings them back to :data:`POLL_S`, and a publish from this process wakes it at once.
Reading the table on every tick kept an idle ``mcpkit serve`` measurably busy.

A call that finds the database unusable (the file cannot be opened or written, the disk
is full or failing, the lock is held past the busy timeout) raises
:class:`~.base.StateUnavailable` and tells the store's watch (:mod:`.watch`); an error in
a statement is a bug and stays what SQLite raised.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from .base import StateBackend, StateLocationError, StateUnavailable, make_private_dirs
from .watch import watch

T = TypeVar("T")
POLL_S = 0.05
IDLE_TICK_MAX_S = 0.4
IDLE_POLL_S = 2.0
EVENT_RETENTION_S = 60.0
#: What SQLite says when the database, not the statement, is the problem.
_UNAVAILABLE = ("unable to open", "disk i/o", "locked", "readonly", "disk is full", "busy")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  channel TEXT NOT NULL, data BLOB NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS events_at ON events(at);
CREATE INDEX IF NOT EXISTS kv_expires ON kv(expires) WHERE expires IS NOT NULL;
"""


def _set_up(conn: sqlite3.Connection, deadline_s: float = 30.0) -> str:
    """WAL mode and the schema; the journal mode it got.

    Retried while the file is locked: processes that start together on one file (two stdio
    servers of one host config, replicas on a shared volume) race to switch it to WAL, and
    SQLite answers that switch "database is locked" at once, without waiting on the busy
    timeout, when another connection holds the file mid-switch."""
    give_up = time.monotonic() + deadline_s
    pause = 0.01
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            return str(mode)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= give_up:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def _create_private(path: Path) -> None:
    """The database file, created readable by this user alone (0600) in folders created
    0700, before SQLite opens it: SQLite gives its ``-wal`` and ``-shm`` files the mode of
    the database file, so they are private too.  A file that exists keeps its mode."""
    make_private_dirs(path.parent)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))


def _connect(path: str) -> tuple[sqlite3.Connection, str]:
    """An open connection in WAL mode with the schema, and its journal mode; a location
    that cannot be used is a :class:`StateLocationError` naming it, in one line."""
    try:
        if path != ":memory:":
            _create_private(Path(path))
        conn = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
        try:
            return conn, _set_up(conn)
        except BaseException:
            conn.close()
            raise
    except StateLocationError as exc:
        raise StateLocationError(f"cannot use the state database {path}: {exc}") from None
    except (OSError, sqlite3.Error) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise StateLocationError(f"cannot use the state database {path}: {why}") from None


def unavailable(error: sqlite3.Error) -> bool:
    """Whether ``error`` says the database cannot be used now (not a bad statement)."""
    text = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and any(m in text for m in _UNAVAILABLE)


class SQLiteBackend(StateBackend):
    kind = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self.watch = watch(self.kind, path)
        self._conn, mode = _connect(path)
        self._lock = threading.Lock()
        self._subscribers: dict[str, set[MemoryObjectSendStream[bytes]]] = {}
        self._poller_running = False
        self._last_event = self._max_event_id()
        # Only a write-ahead log tells of every commit (a file system may refuse WAL mode).
        in_wal = path != ":memory:" and str(mode).lower() == "wal"
        self._wal = f"{os.path.abspath(path)}-wal" if in_wal else None
        self._wake: anyio.Event | None = None  # set to end the poller's current tick

    def _max_event_id(self) -> int:
        row = self._conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
        return int(row[0])

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                return fn(self._conn)

        try:
            found = await anyio.to_thread.run_sync(call)
        except sqlite3.Error as exc:
            if unavailable(exc):
                raise self.watch.failed(exc) from None
            raise
        self.watch.answered()
        return found

    async def ping(self) -> bool:
        try:
            await self._run(lambda c: c.execute("SELECT 1 FROM kv LIMIT 1").fetchall())
        except Exception:
            return False
        return True

    @staticmethod
    def _expiry(ttl_s: float | None) -> float | None:
        return None if ttl_s is None else time.time() + ttl_s

    async def get(self, key: str) -> bytes | None:
        def op(c: sqlite3.Connection) -> bytes | None:
            row = c.execute(
                "SELECT value FROM kv WHERE key=? AND (expires IS NULL OR expires > ?)",
                (key, time.time()),
            ).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(op)

    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        exp = self._expiry(ttl_s)
        await self._run(
            lambda c: c.execute(
                "INSERT INTO kv(key, value, expires) VALUES(?,?,?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value, expires=excluded.expires",
                (key, value, exp),
            )
        )

    async def add(self, key: str, value: bytes, ttl_s: float | None = None) -> bool:
        exp = self._expiry(ttl_s)

        def op(c: sqlite3.Connection) -> bool:
            c.execute("BEGIN IMMEDIATE")
            try:
                c.execute(
                    "DELETE FROM kv WHERE key=? AND expires IS NOT NULL AND expires <= ?",
                    (key, time.time()),
                )
                cur = c.execute(
                    "INSERT OR IGNORE INTO kv(key, value, expires) VALUES(?,?,?)", (key, value, exp)
                )
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
            return cur.rowcount == 1

        return await self._run(op)

    async def cas(
        self, key: str, expected: bytes | None, value: bytes | None, ttl_s: float | None = None
    ) -> bool:
        exp = self._expiry(ttl_s)

        def op(c: sqlite3.Connection) -> bool:
            c.execute("BEGIN IMMEDIATE")
            try:
                row = c.execute(
                    "SELECT value FROM kv WHERE key=? AND (expires IS NULL OR expires > ?)",
                    (key, time.time()),
                ).fetchone()
                current = None if row is None else bytes(row[0])
                if current != expected:
                    c.execute("ROLLBACK")
                    return False
                if value is None:
                    c.execute("DELETE FROM kv WHERE key=?", (key,))
                else:
                    c.execute(
                        "INSERT INTO kv(key, value, expires) VALUES(?,?,?) ON CONFLICT(key) DO "
                        "UPDATE SET value=excluded.value, expires=excluded.expires",
                        (key, value, exp),
                    )
                c.execute("COMMIT")
                return True
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    c.execute("ROLLBACK")
                raise

        return await self._run(op)

    async def delete(self, key: str) -> bool:
        def op(c: sqlite3.Connection) -> bool:
            return c.execute("DELETE FROM kv WHERE key=?", (key,)).rowcount > 0

        return await self._run(op)

    async def reap_expired(self, limit: int = 500) -> int:
        """One batch of expired rows, found through the ``kv_expires`` index (no scan of
        the live rows): the write lock is held for one short DELETE, not for all of them."""

        def op(c: sqlite3.Connection) -> int:
            cur = c.execute(
                "DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv WHERE expires IS NOT "
                "NULL AND expires <= ? LIMIT ?)",
                (time.time(), limit),
            )
            return int(cur.rowcount)

        return await self._run(op)

    async def publish(self, channel: str, data: bytes) -> None:
        now = time.time()
        await self._run(
            lambda c: c.execute(
                "INSERT INTO events(channel, data, at) VALUES(?,?,?)", (channel, data, now)
            )
        )
        if self._wake is not None:  # this process's own subscribers need not wait a tick
            self._wake.set()

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[bytes]]:
        send, recv = anyio.create_memory_object_stream[bytes](256)
        self._subscribers.setdefault(channel, set()).add(send)
        async with anyio.create_task_group() as tg:
            if not self._poller_running:
                self._poller_running = True
                tg.start_soon(self._poll)
            try:
                yield recv
            finally:
                self._subscribers[channel].discard(send)
                send.close()
                tg.cancel_scope.cancel()
                self._poller_running = False

    def change_token(self) -> tuple[int, int] | None:
        """The write-ahead log's (modification time, size): it changes with every commit.
        None when there is no log to watch (``:memory:``, or a database the file system
        kept out of WAL mode): then every tick reads."""
        if self._wal is None:
            return None
        try:
            info = os.stat(self._wal)
        except OSError:
            return (0, -1)  # no log (yet): the first commit creates it
        return (info.st_mtime_ns, info.st_size)

    async def _poll(self) -> None:
        pruned_at = 0.0
        seen: tuple[int, int] | None = None
        read_at = -math.inf
        tick = POLL_S
        while True:
            # Taken before the read: a commit during it changes the signature again.
            signature = self.change_token()
            now = time.monotonic()
            if signature is not None and signature == seen and now - read_at < IDLE_POLL_S:
                tick = min(tick * 2, IDLE_TICK_MAX_S)
                await self._pause(tick)
                continue
            if signature != seen:
                tick = POLL_S
            seen, read_at = signature, now
            last = self._last_event

            def fetch(c: sqlite3.Connection, last: int = last) -> list[Any]:
                return c.execute(
                    "SELECT id, channel, data FROM events WHERE id > ? ORDER BY id", (last,)
                ).fetchall()

            try:
                rows = await self._run(fetch)
            except StateUnavailable:  # (its watch logged it): subscribers wait it out
                await self._pause(IDLE_TICK_MAX_S)
                continue
            for event_id, channel, data in rows:
                self._last_event = max(self._last_event, event_id)
                for stream in tuple(self._subscribers.get(channel, ())):
                    with contextlib.suppress(
                        anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError
                    ):
                        stream.send_nowait(bytes(data))
            now = time.time()
            if now - pruned_at > 10:
                pruned_at = now
                with contextlib.suppress(StateUnavailable):  # pruned at the next round
                    await self._run(partial(_prune, cutoff=now - EVENT_RETENTION_S))
            await self._pause(tick)

    async def _pause(self, seconds: float) -> None:
        """Sleep until the next tick, or until this process publishes."""
        self._wake = wake = anyio.Event()
        with anyio.move_on_after(seconds):
            await wake.wait()

    async def aclose(self) -> None:
        with self._lock:
            self._conn.close()


def _prune(c: sqlite3.Connection, cutoff: float) -> None:
    c.execute("DELETE FROM events WHERE at < ?", (cutoff,))
