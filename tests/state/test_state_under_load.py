"""A state store under load, as one busy replica or many put it there:

* many writers of one hot key (every task a principal creates joins that principal's
  index) all get through ``update_json``: a lost compare-and-set is retried after a random
  wait that grows per loss, so no writer gives up and no update is lost;
* a writer that still loses (``attempts`` times in a row) is answered "busy, retry
  later" (-31050, HTTP 503), not an internal error;
* more Redis calls at once than the connection pool holds wait for a connection instead
  of failing as if Redis were down.

Each store is reached through two backends, as two replicas reach one store.  Real Redis
and a real SQLite file; the memory backend is one process's store, so it gets one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.state import StateBackend, StateUnavailable, open_backend
from mcpkit.state.memory import MemoryBackend
from support.servers import redis_server

pytestmark = pytest.mark.anyio

WRITERS_PER_REPLICA = 32
WRITES_EACH = 10
KEY = "tasks-of:everyone"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # (redis-py's asyncio client)


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Any]]:
    kind = request.param
    if kind == "memory":
        backend = open_backend("memory:")
        yield [backend]
        await backend.aclose()
        return
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'state.db'}"
        backends = [open_backend(url), open_backend(url)]
        yield backends
        for backend in backends:
            await backend.aclose()
        return
    with redis_server() as port:
        url = f"redis://127.0.0.1:{port}/0"
        backends = [open_backend(url), open_backend(url)]
        yield backends
        for backend in backends:
            await backend.aclose()


async def test_every_writer_of_one_hot_key_gets_through(replicas: list[StateBackend]) -> None:
    async def writer(backend: StateBackend, name: str) -> None:
        for i in range(WRITES_EACH):
            item = f"{name}-{i}"

            def add(ids: Any, item: str = item) -> list[Any]:
                return [*(ids or []), item]

            await backend.update_json(KEY, add)

    async with anyio.create_task_group() as tg:
        for r, backend in enumerate(replicas):
            for w in range(WRITERS_PER_REPLICA):
                tg.start_soon(writer, backend, f"r{r}w{w}")

    stored = await replicas[0].get_json(KEY)
    expected = {
        f"r{r}w{w}-{i}"
        for r in range(len(replicas))
        for w in range(WRITERS_PER_REPLICA)
        for i in range(WRITES_EACH)
    }
    assert len(stored) == len(expected)
    assert set(stored) == expected


async def test_a_burst_beyond_the_redis_pool_waits_for_a_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """More calls at once than the pool has connections queue for one: none is refused
    as if the store were down, no outage is logged, and no more connections are opened
    than the URL allows (Redis counts them)."""
    import redis.asyncio as aioredis

    with redis_server() as port:
        url = f"redis://127.0.0.1:{port}/0"
        backend = open_backend(f"{url}?max_connections=4")
        answered: list[bytes] = []

        async def one(i: int) -> None:
            await backend.set(f"burst:{i}", b"%d" % i, 60)
            answered.append(await backend.get(f"burst:{i}") or b"")

        with caplog.at_level("WARNING", logger="mcpkit.state"):
            async with anyio.create_task_group() as tg:
                for i in range(64):
                    tg.start_soon(one, i)
        observer = aioredis.from_url(url)
        connected = (await observer.info("clients"))["connected_clients"]
        await observer.aclose()
        await backend.aclose()
    assert connected <= 4 + 1  # (the observer's own)
    assert sorted(answered) == sorted(b"%d" % i for i in range(64))
    assert not [r for r in caplog.records if r.name.startswith("mcpkit.state")]


class _Rivalled(MemoryBackend):
    """A store where another writer changes every key just before this one's
    compare-and-set lands (a real conflict, through the backend's own ``cas``)."""

    rivals = 0

    async def cas(
        self, key: str, expected: bytes | None, value: bytes | None, ttl_s: float | None = None
    ) -> bool:
        self.rivals += 1
        await self.set_json(key, [f"rival {self.rivals}"])
        return await super().cas(key, expected, value, ttl_s)


async def test_a_writer_that_keeps_losing_is_told_to_retry_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = _Rivalled()
    with caplog.at_level("WARNING", logger="mcpkit.state"), pytest.raises(StateUnavailable) as lost:
        await backend.update_json(KEY, lambda ids: [*(ids or []), "mine"], attempts=4)
    assert lost.value.code == -31050 and lost.value.http_status == 503
    assert str(lost.value.message) == "State store busy (memory): retry later"
    assert await backend.get_json(KEY) == ["rival 4"]
    assert [r.getMessage() for r in caplog.records] == [
        f"state update of {KEY!r} lost 4 times in a row to other writers"
    ]


async def test_a_turn_is_given_back_by_every_way_a_call_ends() -> None:
    """The pool's turns (redis_turns.py): a subscription holds one while it lasts, a wait
    past ``wait_s`` fails as an unreachable store, and calls that fail to connect give
    their turn back (a dead Redis never leaves the pool without turns)."""
    import redis.asyncio as aioredis
    from redis.exceptions import ConnectionError as RedisConnectionError

    from mcpkit.state.redis_turns import TurnTakingPool

    with redis_server() as port:
        url = f"redis://127.0.0.1:{port}/0"
        client = aioredis.Redis.from_pool(
            TurnTakingPool.from_url(url, max_connections=1, wait_s=0.2)
        )
        pubsub = client.pubsub()
        await pubsub.subscribe("held")  # holds the one connection
        with pytest.raises(RedisConnectionError, match=r"no Redis connection free within 0\.2s"):
            await client.get("k")
        await pubsub.aclose()
        await client.set("k", b"v")
        assert await client.get("k") == b"v"
        await client.aclose()

    dead = aioredis.Redis.from_pool(
        TurnTakingPool.from_url(url, max_connections=2, wait_s=0.2, socket_connect_timeout=1)
    )
    for _ in range(5):  # more failed calls than turns: each failed to connect, none waited
        with pytest.raises(RedisConnectionError) as refused:
            await dead.get("k")
        assert "free within" not in str(refused.value), refused.value
    await dead.aclose()


async def test_every_writer_of_one_recent_list_gets_through(replicas: list[StateBackend]) -> None:
    """The index of a principal's tasks (``remember_recent``): many writers at once, all
    kept, on every backend (Redis: one transaction each, no retries)."""

    async def writer(backend: StateBackend, name: str) -> None:
        for i in range(WRITES_EACH):
            await backend.remember_recent("task-list:everyone", f"{name}-{i}", 10_000, 60)

    async with anyio.create_task_group() as tg:
        for r, backend in enumerate(replicas):
            for w in range(WRITERS_PER_REPLICA):
                tg.start_soon(writer, backend, f"r{r}w{w}")

    stored = await replicas[-1].recent("task-list:everyone")
    assert len(stored) == len(replicas) * WRITERS_PER_REPLICA * WRITES_EACH
    assert len(set(stored)) == len(stored)
    for name in {item.rsplit("-", 1)[0] for item in stored}:  # each writer's in its order
        mine = [item for item in stored if item.rsplit("-", 1)[0] == name]
        assert mine == [f"{name}-{i}" for i in range(WRITES_EACH)]


async def test_a_recent_list_moves_a_repeat_last_keeps_the_newest_and_expires(
    replicas: list[StateBackend],
) -> None:
    backend = replicas[0]
    assert await backend.recent("list") == []
    for item in ["a", "b", "c", "a"]:
        await backend.remember_recent("list", item, 3, 60)
    assert await backend.recent("list") == ["b", "c", "a"]
    await backend.remember_recent("list", "d", 2, 60)
    assert await backend.recent("list") == ["a", "d"]
    await backend.remember_recent("short", "x", 3, 0.2)
    assert await backend.recent("short") == ["x"]
    await anyio.sleep(0.4)
    assert await backend.recent("short") == []
