"""The scale-out picture of issue #23: 2 replicas behind nginx, 2 workers, one Redis.

200 tasks are created through nginx (half of them idempotent), one worker is SIGKILLed
while it runs its share, and then every task is accounted for from Redis:

* every idempotent task completes (run again by the survivor when its first run died);
* every non-idempotent task ran at most once: it completed, or it was on the dead
  worker and failed with the clear "stopped before it finished" error;
* no task is lost (all 200 settle, the stream drains, no principal keeps a slot).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from scalekit import (
    TERMINAL,
    create,
    external_replica,
    get,
    queue_stats,
    record,
    runs,
    start_worker,
    wait_until,
)
from services import nginx_round_robin, redis_server

from support.servers import need

pytestmark = pytest.mark.anyio

TASKS = 200
SECONDS = 1.0


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


async def _all(limit: int, jobs: list[Any]) -> list[Any]:
    """Run the coroutine functions in ``jobs`` with at most ``limit`` at once."""
    results: list[Any] = [None] * len(jobs)
    gate = anyio.Semaphore(limit)

    async def one(i: int) -> None:
        async with gate:
            results[i] = await jobs[i]()

    async with anyio.create_task_group() as tg:
        for i in range(len(jobs)):
            tg.start_soon(one, i)
    return results


async def test_200_tasks_two_replicas_two_workers_one_killed(
    stack: ExitStack, tmp_path: Path
) -> None:
    need("redis-server")
    need("nginx")
    state = stack.enter_context(redis_server())
    replicas = [external_replica(state, tmp_path) for _ in range(2)]
    for r in replicas:
        stack.callback(r.kill)
    port = stack.enter_context(nginx_round_robin([r.port for r in replicas]))
    front = f"http://127.0.0.1:{port}/mcp"
    doomed = start_worker(state, tmp_path, "doomed", "--concurrency", "16")
    stack.callback(doomed.kill)
    survivor = start_worker(state, tmp_path, "survivor", "--concurrency", "16")
    stack.callback(survivor.kill)

    kinds = ["job_again" if i % 2 == 0 else "job_once" for i in range(TASKS)]
    labels = [f"s{i}" for i in range(TASKS)]
    async with httpx.AsyncClient(timeout=60) as client:
        ids: list[str] = await _all(
            16,
            [
                (lambda i=i: create(client, front, kinds[i], label=labels[i], seconds=SECONDS))
                for i in range(TASKS)
            ],
        )
        assert len(set(ids)) == TASKS

        def started_by_doomed() -> int:
            return sum(doomed.pid in runs(state, label) for label in labels)

        def running_on_doomed() -> set[str]:
            """The kinds of the tasks the doomed worker runs now (started, unsettled)."""
            return {
                kinds[i]
                for i, label in enumerate(labels)
                if doomed.pid in runs(state, label)
                and record(state, ids[i])["status"] not in TERMINAL
            }

        # Mid-run: the doomed worker has finished some tasks and runs more of both kinds
        # (the kill must hit work of each; a task runs SECONDS, far longer than one look).
        await wait_until(
            lambda: started_by_doomed() >= 24 and running_on_doomed() == {"job_again", "job_once"},
            limit=120,
        )
        doomed.kill()

        async def settled(task_id: str) -> dict[str, Any]:
            with anyio.fail_after(180):
                while True:
                    result = await get(client, front, task_id)
                    if result["status"] in TERMINAL:
                        return result
                    await anyio.sleep(0.5)

        final: list[dict[str, Any]] = await _all(16, [(lambda t=t: settled(t)) for t in ids])

    reruns = failed_once = 0
    for kind, label, result in zip(kinds, labels, final, strict=True):
        started = runs(state, label)
        if kind == "job_again":
            assert result["status"] == "completed", (label, result, survivor.tail())
            finisher = int(result["result"]["content"][0]["text"].split()[-1])
            assert started and started[-1] == finisher, (label, started, finisher)
            assert set(started) <= {doomed.pid, survivor.pid}
            reruns += len(started) > 1
            continue
        assert len(started) <= 1, (label, started)  # never twice
        if result["status"] == "completed":
            finisher = int(result["result"]["content"][0]["text"].split()[-1])
            assert started == [finisher], (label, started, finisher)
        else:
            # It was the dead worker's (claimed by it; started, or about to).
            assert result["status"] == "failed", (label, result)
            assert "stopped before it finished" in result["error"]["message"]
            assert started in ([doomed.pid], []), (label, started)
            failed_once += 1
    print(f"reruns={reruns} failed_once={failed_once} of {TASKS}")
    # The kill really hit work of both kinds.
    assert reruns > 0 and failed_once > 0, (reruns, failed_once)
    stats = queue_stats(state)
    assert stats["depth"] == 0 and stats["unfinishedByPrincipal"] == {}, stats
