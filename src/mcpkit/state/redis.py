"""Redis backend (redis-py asyncio): for many replicas behind a load balancer.

``cas`` is one Lua script (atomic on the server); expiry is Redis's own; pub/sub is
Redis pub/sub.  Install with ``pip install 'mcpkit[redis]'``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..types.extras import require
from .base import StateBackend

_CAS = """
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current then return 0 end
else
  if (not current) or current ~= ARGV[2] then return 0 end
end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
elseif ARGV[5] ~= '' then
  redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
else
  redis.call('SET', KEYS[1], ARGV[4])
end
return 1
"""


class RedisBackend(StateBackend):
    def __init__(self, url: str, prefix: str = "mcpkit:") -> None:
        aioredis = require("redis.asyncio", "redis", "the Redis state backend")
        self.url = url
        self.prefix = prefix
        self._redis: Any = aioredis.from_url(url, decode_responses=False)
        self._cas = self._redis.register_script(_CAS)

    @property
    def client(self) -> Any:
        """The redis-py client, for the task queue (:mod:`.queue`), which uses Redis
        Streams directly rather than this key-value interface."""
        return self._redis

    def _k(self, key: str) -> str:
        return self.prefix + key

    @staticmethod
    def _px(ttl_s: float | None) -> int | None:
        return None if ttl_s is None else max(1, int(ttl_s * 1000))

    async def get(self, key: str) -> bytes | None:
        value = await self._redis.get(self._k(key))
        return None if value is None else bytes(value)

    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        await self._redis.set(self._k(key), value, px=self._px(ttl_s))

    async def add(self, key: str, value: bytes, ttl_s: float | None = None) -> bool:
        return bool(await self._redis.set(self._k(key), value, px=self._px(ttl_s), nx=True))

    async def cas(
        self, key: str, expected: bytes | None, value: bytes | None, ttl_s: float | None = None
    ) -> bool:
        px = self._px(ttl_s)
        args = [
            "1" if expected is None else "0",
            expected or b"",
            "1" if value is None else "0",
            value or b"",
            "" if px is None else str(px),
        ]
        return bool(await self._cas(keys=[self._k(key)], args=args))

    async def delete(self, key: str) -> bool:
        return bool(await self._redis.delete(self._k(key)))

    async def publish(self, channel: str, data: bytes) -> None:
        await self._redis.publish(self._k(channel), data)

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[bytes]]:
        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(self._k(channel))

        async def messages() -> AsyncIterator[bytes]:
            async for message in pubsub.listen():
                if message.get("type") == "message":
                    yield bytes(message["data"])

        try:
            yield messages()
        finally:
            with contextlib.suppress(Exception):
                await pubsub.unsubscribe()
                await pubsub.aclose()

    async def aclose(self) -> None:
        await self._redis.aclose()
