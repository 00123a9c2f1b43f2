"""mcpkit.state.queue against a real redis-server: the consumer-group calls the workers
rely on, one at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from mcpkit.state.queue import QueueFull, TaskQueue
from mcpkit.state.redis import RedisBackend

pytestmark = pytest.mark.anyio


@pytest.fixture
async def queue(redis_url: str, request: pytest.FixtureRequest) -> AsyncIterator[TaskQueue]:
    backend = RedisBackend(redis_url, prefix=f"{request.node.name}:")
    yield TaskQueue.of(backend)
    await backend.aclose()


async def test_cap_counts_unfinished_tasks_per_owner(queue: TaskQueue) -> None:
    assert await queue.enqueue("t1", "alice", 2) == 1
    assert await queue.enqueue("t2", "alice", 2) == 2
    with pytest.raises(QueueFull) as full:
        await queue.enqueue("t3", "alice", 2)
    assert (full.value.count, full.value.limit) == (2, 2)
    assert await queue.enqueue("b1", "bob", 2) == 1  # another owner has its own count
    await queue.release("alice", "t1")
    await queue.release("alice", "t1")  # settling twice frees one place, not two
    assert await queue.enqueue("t3", "alice", 2) == 2
    stats = await queue.stats()
    assert stats["unfinishedByPrincipal"] == {"alice": 2, "bob": 1}
    assert stats["depth"] == 4 and stats["waiting"] == 4 and stats["running"] == 0


async def test_read_touch_reclaim_ack(queue: TaskQueue) -> None:
    await queue.enqueue("t1", "", 0)
    await queue.enqueue("t2", "", 0)
    got = await queue.read("w1", 10, 100)
    assert [e.task_id for e in got] == ["t1", "t2"]
    assert await queue.read("w2", 10, 100) == []  # delivered once per group
    await anyio.sleep(0.6)
    await queue.touch("w1", [got[0].id])  # w1 is still on t1
    taken = await queue.reclaim("w2", 500, 10)  # t2 idled past 500 ms; t1 was just touched
    assert [e.task_id for e in taken] == ["t2"]
    stats = await queue.stats()
    assert stats["running"] == 2 and stats["waiting"] == 0
    held = {w["name"]: w["pending"] for w in stats["workers"]}
    assert held == {"w1": 1, "w2": 1}
    await queue.ack(got[0].id)
    await queue.ack(taken[0].id)
    stats = await queue.stats()
    assert stats["depth"] == 0 and stats["running"] == 0


async def test_forget_keeps_a_consumer_that_holds_entries(queue: TaskQueue) -> None:
    await queue.enqueue("t1", "", 0)
    [entry] = await queue.read("w1", 1, 100)
    assert await queue.forget("w1") is False  # its entry must stay claimable
    await queue.give("w2", entry.id)  # handed to another consumer
    assert await queue.forget("w1") is True
    stats = await queue.stats()
    assert [w["name"] for w in stats["workers"]] == ["w2"]
    await queue.requeue(entry.id, entry.task_id)  # back to the end, for anyone
    [again] = await queue.read("w3", 1, 100)
    assert again.task_id == "t1" and again.id != entry.id


async def test_the_queue_needs_redis() -> None:
    from mcpkit.state.memory import MemoryBackend

    with pytest.raises(ValueError, match="needs the Redis state backend"):
        TaskQueue.of(MemoryBackend())
