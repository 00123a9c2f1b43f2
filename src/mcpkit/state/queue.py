"""The task queue: a Redis Streams consumer group, used through redis-py.

Replicas started with ``--task-workers external`` add one stream entry per task-backed
tool call; ``mcpkit worker`` processes read them with ``XREADGROUP`` as consumers of one
group.  Redis keeps, per entry, which consumer holds it and for how long it has been idle
(the pending entries list): a live worker resets that idle time every few seconds
(``XCLAIM`` of its own entries), so an entry whose idle time passes the task lease belongs
to a worker that died, and ``XAUTOCLAIM`` hands it to a live one.  An entry is
acknowledged and deleted (``XACK`` + ``XDEL``) once its task is settled, so the stream's
length is the queue depth.  No delivery logic is ours: this module only names the keys
and packs the calls.

Whether a reclaimed task runs again is not decided here but by the task record (see
:mod:`mcpkit.server.workers`): the stream says *who* holds an entry, the record says
whether its tool already started.

Backpressure: every unfinished task of a principal is a member of that principal's sorted
set (score: enqueue time).  Adding the member and the stream entry is one Lua script that
first counts the members, so the cap holds under concurrent replicas.  Removing a member
is idempotent (``ZREM``), so a task settled twice (a worker and a replica's lease check)
never frees two places.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import StateBackend

#: Around every call to Redis: turns an unreachable Redis into ``StateUnavailable``.
Reaching = Callable[[], contextlib.AbstractContextManager[None]]

__all__ = ["QueueFull", "TaskQueue"]

GROUP = "mcpkit-workers"

#: KEYS: owner set, owners index, stream.  ARGV: owner, task id, cap (0: none),
#: now (ms), expiry horizon (ms).  Returns the owner's count after adding, or -count when full.
_ENQUEUE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[4]) - tonumber(ARGV[5]))
local n = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[3])
if cap > 0 and n >= cap then return -n end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'task', ARGV[2])
return n + 1
"""

#: KEYS: owner set, owners index.  ARGV: owner, now (ms), horizon (ms).  The owner's
#: unfinished count; an owner with none leaves the index (atomically, so a concurrent
#: enqueue cannot be dropped from it).
_COUNT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
local n = redis.call('ZCARD', KEYS[1])
if n == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return n
"""

#: KEYS: stream.  ARGV: group, consumer.  Delete the consumer only if it holds nothing:
#: DELCONSUMER drops a consumer's pending entries, and one could have been handed to it
#: (``give``) since it last looked.
_FORGET = """
local held = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #held > 0 then return -1 end
return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
"""


class QueueFull(Exception):
    """The principal already has ``limit`` unfinished tasks."""

    def __init__(self, count: int, limit: int) -> None:
        super().__init__(f"{count} unfinished tasks (limit {limit})")
        self.count = count
        self.limit = limit


@dataclass(frozen=True, slots=True)
class QueuedEntry:
    """One stream entry: its id and the task it carries."""

    id: str
    task_id: str


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _entries(raw: Any) -> list[QueuedEntry]:
    out = []
    for entry_id, fields in raw or []:
        if not fields:  # deleted since it was delivered
            continue
        task = fields.get(b"task", fields.get("task"))
        if task is not None:
            out.append(QueuedEntry(_text(entry_id), _text(task)))
    return out


class TaskQueue:
    """Task ids in a Redis stream, read by a consumer group of workers."""

    def __init__(
        self,
        redis: Any,
        prefix: str = "mcpkit:",
        horizon_s: float = 3660.0,
        reaching: Reaching = contextlib.nullcontext,
    ) -> None:
        self.redis = redis
        self._reaching = reaching
        self.stream = prefix + "tasks:stream"
        self._owners = prefix + "tasks:owners"
        self._owner_prefix = prefix + "tasks:owner:"
        #: Members older than this (the task records' lifetime) are dropped when counting.
        self.horizon_ms = int(horizon_s * 1000)
        self._enqueue = redis.register_script(_ENQUEUE)
        self._count = redis.register_script(_COUNT)
        self._forget = redis.register_script(_FORGET)
        self._group_ready = False

    @classmethod
    def of(cls, backend: StateBackend, horizon_s: float = 3660.0) -> TaskQueue:
        """The queue beside a :class:`~mcpkit.state.redis.RedisBackend`'s keys."""
        client = getattr(backend, "client", None)
        if client is None:
            raise ValueError(
                f"the task queue needs the Redis state backend (--state redis://...), "
                f"not {backend.url or type(backend).__name__!r}"
            )
        reaching = getattr(backend, "reaching", contextlib.nullcontext)
        return cls(client, getattr(backend, "prefix", "mcpkit:"), horizon_s, reaching)

    def _owner_key(self, owner: str) -> str:
        return self._owner_prefix + owner

    async def ensure_group(self) -> None:
        """Create the group at the stream's start (so entries added before any worker
        existed are delivered); an existing group is kept."""
        with self._reaching():
            if self._group_ready:
                return
            try:
                await self.redis.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
            except Exception as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
            self._group_ready = True

    # ------------------------------------------------------------------ producer side
    async def enqueue(self, task_id: str, owner: str, limit: int) -> int:
        """Add the task for ``owner`` (raises :class:`QueueFull` past ``limit``; 0: no
        limit); returns the owner's unfinished count including this one."""
        with self._reaching():
            await self.ensure_group()
            count = int(
                await self._enqueue(
                    keys=[self._owner_key(owner), self._owners, self.stream],
                    args=[owner, task_id, limit, int(time.time() * 1000), self.horizon_ms],
                )
            )
            if count < 0:
                raise QueueFull(-count, limit)
            return count

    async def release(self, owner: str, task_id: str) -> None:
        """The task is settled: free its place in the owner's count (idempotent)."""
        with self._reaching():
            await self.redis.zrem(self._owner_key(owner), task_id)

    # ------------------------------------------------------------------ consumer side
    async def read(self, consumer: str, count: int, block_ms: int) -> list[QueuedEntry]:
        """New entries for ``consumer`` (at most ``count``; waits up to ``block_ms``)."""
        with self._reaching():
            await self.ensure_group()
            reply = await self.redis.xreadgroup(
                GROUP, consumer, {self.stream: ">"}, count=count, block=block_ms
            )
            out: list[QueuedEntry] = []
            for _stream, raw in reply or []:
                out.extend(_entries(raw))
            return out

    async def reclaim(self, consumer: str, min_idle_ms: int, count: int) -> list[QueuedEntry]:
        """Entries idle for ``min_idle_ms`` (their worker stopped touching them), now
        held by ``consumer`` (``XAUTOCLAIM``)."""
        with self._reaching():
            await self.ensure_group()
            reply = await self.redis.xautoclaim(
                self.stream, GROUP, consumer, min_idle_ms, start_id="0-0", count=count
            )
            return _entries(reply[1] if len(reply) > 1 else [])

    async def touch(self, consumer: str, entry_ids: list[str]) -> None:
        """Reset the idle time of entries ``consumer`` is working on (the heartbeat that
        keeps them from being reclaimed)."""
        with self._reaching():
            if entry_ids:
                await self.redis.xclaim(self.stream, GROUP, consumer, 0, entry_ids, justid=True)

    async def give(self, consumer: str, entry_id: str) -> None:
        """Hand an entry to another (live) consumer without running it."""
        with self._reaching():
            await self.redis.xclaim(self.stream, GROUP, consumer, 0, [entry_id], justid=True)

    async def ack(self, entry_id: str) -> None:
        """The entry's task is settled: acknowledge and delete it."""
        with self._reaching():
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.xack(self.stream, GROUP, entry_id)
                pipe.xdel(self.stream, entry_id)
                await pipe.execute()

    async def requeue(self, entry_id: str, task_id: str) -> None:
        """Put the task back at the end of the queue for any worker (a graceful stop
        handing back work it will not finish)."""
        with self._reaching():
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.xadd(self.stream, {"task": task_id})
                pipe.xack(self.stream, GROUP, entry_id)
                pipe.xdel(self.stream, entry_id)
                await pipe.execute()

    async def forget(self, consumer: str) -> bool:
        """Remove a consumer that holds nothing (a worker leaving cleanly); False when it
        still holds entries (they stay claimable by other workers)."""
        with self._reaching():
            return int(await self._forget(keys=[self.stream], args=[GROUP, consumer])) >= 0

    # ------------------------------------------------------------------ depth
    async def depth(self) -> tuple[int, int]:
        """(entries in the stream, of which delivered to a worker and not settled): two
        cheap commands, for a metric sampled every few seconds (:meth:`stats` also walks
        the workers and the principals)."""
        with self._reaching():
            await self.ensure_group()
            depth = int(await self.redis.xlen(self.stream))
            pending = await self.redis.xpending(self.stream, GROUP)
            running = int(pending.get("pending", 0)) if isinstance(pending, dict) else 0
            return depth, running

    async def stats(self) -> dict[str, Any]:
        """Queue depth: entries in the stream (``depth``), of which delivered to a worker
        and not yet settled (``running``) and not yet delivered (``waiting``); workers
        with what they hold and how long since they were last heard of; unfinished tasks
        per principal."""
        depth, running = await self.depth()
        consumers = [
            {
                "name": _text(c["name"]),
                "pending": int(c["pending"]),
                "idleMs": int(c["idle"]),
            }
            for c in await self.redis.xinfo_consumers(self.stream, GROUP)
        ]
        owners: dict[str, int] = {}
        now_ms = int(time.time() * 1000)
        for raw in await self.redis.smembers(self._owners):
            owner = _text(raw)
            count = int(
                await self._count(
                    keys=[self._owner_key(owner), self._owners],
                    args=[owner, now_ms, self.horizon_ms],
                )
            )
            if count:
                owners[owner] = count
        return {
            "depth": depth,
            "running": running,
            "waiting": max(0, depth - running),
            "workers": consumers,
            "unfinishedByPrincipal": owners,
        }
