"""In-process backend: for tests and single-process servers that need no durability.

Expiry is checked on read; :meth:`MemoryBackend.reap_expired` frees records nobody reads
again (a finished task, a dropped session) from a heap of expiry times, so reaping costs
the expired records, not the live ones.
"""

from __future__ import annotations

import contextlib
import heapq
import time
from collections.abc import AsyncIterator

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from .base import StateBackend


class MemoryBackend(StateBackend):
    url = "memory:"

    def __init__(self) -> None:
        self._data: dict[str, tuple[bytes, float | None]] = {}
        self._subscribers: dict[str, set[MemoryObjectSendStream[bytes]]] = {}
        #: (expiry, key) of every write with a TTL; an entry whose key was written again
        #: since is stale and skipped when it comes up.
        self._expiries: list[tuple[float, str]] = []

    def _live(self, key: str) -> bytes | None:
        item = self._data.get(key)
        if item is None:
            return None
        value, expires = item
        if expires is not None and expires <= time.time():
            del self._data[key]
            return None
        return value

    def _store(self, key: str, value: bytes, ttl_s: float | None) -> None:
        expires = None if ttl_s is None else time.time() + ttl_s
        self._data[key] = (value, expires)
        if expires is not None:
            heapq.heappush(self._expiries, (expires, key))

    async def reap_expired(self, limit: int = 500) -> int:
        now = time.time()
        heap, data = self._expiries, self._data
        deleted = 0
        while heap and heap[0][0] <= now and deleted < limit:
            _, key = heapq.heappop(heap)
            item = data.get(key)
            if item is not None and item[1] is not None and item[1] <= now:
                del data[key]
                deleted += 1
        return deleted

    async def get(self, key: str) -> bytes | None:
        return self._live(key)

    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        self._store(key, value, ttl_s)

    async def add(self, key: str, value: bytes, ttl_s: float | None = None) -> bool:
        if self._live(key) is not None:
            return False
        self._store(key, value, ttl_s)
        return True

    async def cas(
        self, key: str, expected: bytes | None, value: bytes | None, ttl_s: float | None = None
    ) -> bool:
        if self._live(key) != expected:
            return False
        if value is None:
            self._data.pop(key, None)
        else:
            self._store(key, value, ttl_s)
        return True

    async def delete(self, key: str) -> bool:
        existed = self._live(key) is not None
        self._data.pop(key, None)
        return existed

    async def publish(self, channel: str, data: bytes) -> None:
        for stream in tuple(self._subscribers.get(channel, ())):
            with contextlib.suppress(
                anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError
            ):
                stream.send_nowait(data)

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[bytes]]:
        send, recv = anyio.create_memory_object_stream[bytes](256)
        self._subscribers.setdefault(channel, set()).add(send)
        try:
            yield recv
        finally:
            self._subscribers[channel].discard(send)
            send.close()
            recv.close()
