"""Redis backend (redis-py asyncio): for many replicas behind a load balancer.

``cas`` is one Lua script (atomic on the server); expiry is Redis's own; pub/sub is
Redis pub/sub.  Install with ``pip install 'mcpkit[redis]'``.

A call that cannot reach Redis (refused, lost, timed out) raises
:class:`~.base.StateUnavailable` and tells the store's watch (:mod:`.watch`), which logs
the outage once; redis-py's pool reconnects by itself once Redis is back.  More calls at
once than the pool has connections wait for one (``MAX_CONNECTIONS``, :mod:`.redis_turns`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ..types.extras import require
from .base import StateBackend
from .watch import watch

#: How long a connection attempt may take before the store counts as unreachable.
CONNECT_TIMEOUT_S = 5.0
#: Connections one backend keeps to Redis at most (``?max_connections=N`` in the URL
#: overrides).  A call finding all of them busy waits for one to come free: a burst of
#: requests is queued, not refused, and only a wait past ``POOL_WAIT_S`` counts as the
#: store being unreachable.
MAX_CONNECTIONS = 100
POOL_WAIT_S = 20.0

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


def unreachable_errors() -> tuple[type[BaseException], ...]:
    """What redis-py raises when Redis cannot be reached (not a refused command)."""
    exceptions = require("redis.exceptions", "redis", "the Redis state backend")
    return (exceptions.ConnectionError, exceptions.TimeoutError, OSError)


class RedisBackend(StateBackend):
    kind = "redis"

    def __init__(self, url: str, prefix: str = "mcpkit:") -> None:
        aioredis = require("redis.asyncio", "redis", "the Redis state backend")
        self.url = url
        self.prefix = prefix
        from .redis_turns import TurnTakingPool

        pool = TurnTakingPool.from_url(
            url,
            max_connections=MAX_CONNECTIONS,
            wait_s=POOL_WAIT_S,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
        )
        self._redis: Any = aioredis.Redis.from_pool(pool)
        self._cas = self._redis.register_script(_CAS)
        self._unreachable = unreachable_errors()
        self.watch = watch(self.kind, url)

    @contextlib.contextmanager
    def reaching(self) -> Iterator[None]:
        """Around one call to Redis: an unreachable store becomes
        :class:`~.base.StateUnavailable` (and the watch hears either way)."""
        try:
            yield
        except self._unreachable as exc:
            raise self.watch.failed(exc) from None
        self.watch.answered()

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
        with self.reaching():
            value = await self._redis.get(self._k(key))
        return None if value is None else bytes(value)

    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        with self.reaching():
            await self._redis.set(self._k(key), value, px=self._px(ttl_s))

    async def add(self, key: str, value: bytes, ttl_s: float | None = None) -> bool:
        with self.reaching():
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
        with self.reaching():
            return bool(await self._cas(keys=[self._k(key)], args=args))

    async def delete(self, key: str) -> bool:
        with self.reaching():
            return bool(await self._redis.delete(self._k(key)))

    async def remember_recent(
        self, key: str, item: str, keep: int, ttl_s: float | None = None
    ) -> None:
        # A Redis list changed in one MULTI/EXEC: writers never conflict.
        full = self._k(key)
        with self.reaching():
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrem(full, 0, item)
                pipe.rpush(full, item)
                pipe.ltrim(full, -keep, -1)
                px = self._px(ttl_s)
                if px is not None:
                    pipe.pexpire(full, px)
                await pipe.execute()

    async def recent(self, key: str) -> list[str]:
        with self.reaching():
            items = await self._redis.lrange(self._k(key), 0, -1)
        return [bytes(i).decode() for i in items]

    async def publish(self, channel: str, data: bytes) -> None:
        with self.reaching():
            await self._redis.publish(self._k(channel), data)

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[bytes]]:
        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        with self.reaching():
            await pubsub.subscribe(self._k(channel))

        async def messages() -> AsyncIterator[bytes]:
            with self.reaching():
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        yield bytes(message["data"])

        try:
            yield messages()
        finally:
            with contextlib.suppress(Exception):
                await pubsub.unsubscribe()
                await pubsub.aclose()

    async def ping(self) -> bool:
        try:
            with self.reaching():
                await self._redis.ping()
        except Exception:
            return False
        return True

    async def aclose(self) -> None:
        await self._redis.aclose()
