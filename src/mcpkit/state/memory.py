"""In-process backend: for tests and single-process servers that need no durability."""

from __future__ import annotations

import contextlib
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

    def _live(self, key: str) -> bytes | None:
        item = self._data.get(key)
        if item is None:
            return None
        value, expires = item
        if expires is not None and expires <= time.time():
            del self._data[key]
            return None
        return value

    @staticmethod
    def _expiry(ttl_s: float | None) -> float | None:
        return None if ttl_s is None else time.time() + ttl_s

    async def get(self, key: str) -> bytes | None:
        return self._live(key)

    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        self._data[key] = (value, self._expiry(ttl_s))

    async def add(self, key: str, value: bytes, ttl_s: float | None = None) -> bool:
        if self._live(key) is not None:
            return False
        self._data[key] = (value, self._expiry(ttl_s))
        return True

    async def cas(
        self, key: str, expected: bytes | None, value: bytes | None, ttl_s: float | None = None
    ) -> bool:
        if self._live(key) != expected:
            return False
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = (value, self._expiry(ttl_s))
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
