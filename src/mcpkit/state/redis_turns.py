"""A redis-py connection pool whose callers take turns when every connection is in use.

redis-py's own ``ConnectionPool`` refuses a call past ``max_connections``
(``MaxConnectionsError``, which reads as the store being down), and its
``BlockingConnectionPool`` waits but costs every call a lock, a condition and a timer
(about 15% of a GET's client time here, bench/RESULTS.md).  This pool waits too, with one
semaphore: free when a connection is, a queue in arrival order when none is.

Imported only with the ``redis`` extra installed (by :class:`~.redis.RedisBackend`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio.connection import ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError

_UNBOUNDED = 2**31


class TurnTakingPool(ConnectionPool):
    """At most ``max_connections`` connections in use; a call finding none free waits for
    one up to ``wait_s`` seconds, then fails as an unreachable store would.

    A connection holds a turn from :meth:`get_connection` to its :meth:`release` (a
    pub/sub subscription holds its connection, and so a turn, while it lasts)."""

    def __init__(self, *, wait_s: float, **options: Any) -> None:
        super().__init__(**options)
        self.wait_s = wait_s
        self._turns = asyncio.Semaphore(self.max_connections)
        self._holding: set[Any] = set()
        # The turns are the bound.  The base pool's own check is lifted: a release that a
        # cancellation moved to the background gives its turn back before the connection
        # is back in the pool, and the next call must then open one, not fail.
        self.max_connections = _UNBOUNDED

    async def get_connection(self, *args: Any, **options: Any) -> Any:
        if self._turns.locked():
            try:
                await asyncio.wait_for(self._turns.acquire(), self.wait_s)
            except TimeoutError:
                raise RedisConnectionError(
                    f"no Redis connection free within {self.wait_s:g}s"
                ) from None
        else:
            await self._turns.acquire()  # (free: returns without suspending)
        get: Any = super().get_connection  # (untyped in redis-py)
        try:
            connection = await get(*args, **options)
        except BaseException:
            # (A connection it took and gave back on the way is not in _holding: the
            # turn is given back here, once.)
            self._turns.release()
            raise
        self._holding.add(connection)
        return connection

    async def release(self, connection: Any) -> None:
        try:
            await super().release(connection)
        finally:
            if connection in self._holding:
                self._holding.discard(connection)
                self._turns.release()
