"""``mcpkit worker``: task-backed calls queued by replicas and run by worker processes.

Real processes throughout: a redis-server, ``mcpkit serve --task-workers external``
replicas and ``mcpkit worker`` processes, killed with real signals.  What each tool body
did is read back from Redis (``runs:<label>``: one pid per start), so "ran once", "ran
again elsewhere" and "never ran" are facts, not inferences from the task status.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from scalekit import (
    TASK_CAPS,
    TERMINAL,
    create,
    external_replica,
    get,
    queue_stats,
    record,
    runs,
    start_worker,
    wait_status,
    wait_until,
)
from services import Replica
from wire import call

from support.mcp import modern_headers, modern_meta

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workers")


@pytest.fixture(scope="module")
def replica(redis_url: str, log_dir: Path) -> Iterator[Replica]:
    rep = external_replica(redis_url, log_dir)
    yield rep
    rep.kill()


async def test_replica_queues_and_a_worker_runs_the_task(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        task_id = await create(client, replica.url, "job_once", label="basic", seconds=0.1)
        queued = await get(client, replica.url, task_id)
        assert queued["status"] == "working"
        assert runs(redis_url, "basic") == []  # the replica did not run it
        worker = start_worker(redis_url, log_dir, "basic")
        try:
            done = await wait_status(client, replica.url, task_id, TERMINAL)
            assert done["status"] == "completed", (done, worker.tail())
            assert done["result"]["content"][0]["text"] == f"basic done by {worker.pid}"
            assert runs(redis_url, "basic") == [worker.pid]
            # A tool that is not task-backed is still answered by the replica itself.
            plain = await call(
                client,
                replica.url,
                "tools/call",
                {"name": "plain", "arguments": {"x": 21}},
                TASK_CAPS,
            )
            assert plain.result["content"][0]["text"] == "42"
        finally:
            worker.kill()


async def test_worker_sees_headers_but_never_credentials(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    params = {"name": "whoami", "arguments": {}, "_meta": modern_meta(TASK_CAPS)}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        **modern_headers(body),
        "x-tenant": "acme",
        "authorization": "Bearer not-for-workers",
    }
    worker = start_worker(redis_url, log_dir, "whoami")
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            reply = await client.post(replica.url, headers=headers, content=json.dumps(body))
            task_id = reply.json()["result"]["taskId"]
            done = await wait_status(client, replica.url, task_id, TERMINAL)
        facts = done["result"]["structuredContent"]
        assert facts["pid"] == worker.pid
        assert facts["tenant"] == "acme"
        assert facts["authorization"] is None
        assert facts["task"] == task_id
        assert "not-for-workers" not in json.dumps(record(redis_url, task_id))
    finally:
        worker.kill()


async def test_listen_on_a_replica_hears_a_task_finish_on_a_worker(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    worker = start_worker(redis_url, log_dir, "listen")
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            task_id = await create(client, replica.url, "job_once", label="heard", seconds=1)
            params = {"notifications": {"taskIds": [task_id]}, "_meta": modern_meta(TASK_CAPS)}
            body = {
                "jsonrpc": "2.0",
                "id": "listen-w",
                "method": "subscriptions/listen",
                "params": params,
            }
            heard: list[dict[str, Any]] = []
            with anyio.fail_after(30):
                async with client.stream(
                    "POST",
                    replica.url,
                    headers=modern_headers(body),
                    content=json.dumps(body),
                ) as stream:
                    async for line in stream.aiter_lines():
                        if not line.startswith("data:"):
                            continue
                        message = json.loads(line[5:])
                        heard.append(message)
                        if message.get("method") == "notifications/tasks" and (
                            message["params"]["status"] == "completed"
                        ):
                            break
        assert heard[0]["params"]["notifications"] == {"taskIds": [task_id]}
        done = heard[-1]["params"]
        assert done["taskId"] == task_id
        assert done["result"]["content"][0]["text"] == f"heard done by {worker.pid}"
    finally:
        worker.kill()


async def test_input_inside_a_task_on_a_worker(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    worker = start_worker(redis_url, log_dir, "input")
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            task_id = await create(client, replica.url, "ask_then_finish")
            parked = await wait_status(client, replica.url, task_id, {"input_required"})
            assert "go" in parked["inputRequests"]
            await call(
                client,
                replica.url,
                "tasks/update",
                {
                    "taskId": task_id,
                    "inputResponses": {"go": {"action": "accept", "content": {"go": True}}},
                },
                TASK_CAPS,
            )
            done = await wait_status(client, replica.url, task_id, TERMINAL)
        assert done["result"]["content"][0]["text"] == f"answered accept on {worker.pid}"
    finally:
        worker.kill()


async def test_manual_start_asks_on_the_replica_then_runs_on_a_worker(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    worker = start_worker(redis_url, log_dir, "manual")
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            params = {"name": "confirm_then_work", "arguments": {"label": "manual"}}
            first = (await call(client, replica.url, "tools/call", params, TASK_CAPS)).result
            assert first["resultType"] == "input_required" and "ok" in first["inputRequests"]
            again = {
                **params,
                "requestState": first["requestState"],
                "inputResponses": {"ok": {"action": "accept", "content": {"ok": True}}},
            }
            created = (await call(client, replica.url, "tools/call", again, TASK_CAPS)).result
            assert created["resultType"] == "task", created
            done = await wait_status(client, replica.url, created["taskId"], TERMINAL)
        assert done["status"] == "completed", (done, worker.tail())
        assert done["result"]["content"][0]["text"] == f"manual: accept on {worker.pid}"
        assert runs(redis_url, "manual") == [worker.pid]  # the replica stopped at start_task
    finally:
        worker.kill()


async def test_cancel_before_any_worker_took_it(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        task_id = await create(client, replica.url, "job_once", label="never", seconds=0.1)
        await call(client, replica.url, "tasks/cancel", {"taskId": task_id}, TASK_CAPS)
        assert (await get(client, replica.url, task_id))["status"] == "cancelled"
        worker = start_worker(redis_url, log_dir, "after-cancel")
        try:
            marker = await create(client, replica.url, "job_once", label="marker", seconds=0)
            await wait_status(client, replica.url, marker, TERMINAL)
            await wait_until(lambda: queue_stats(redis_url)["depth"] == 0, what="drained")
        finally:
            worker.kill()
    assert runs(redis_url, "never") == []  # the cancelled task's tool never started


async def test_cancel_a_task_running_on_a_worker(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    worker = start_worker(redis_url, log_dir, "cancel")
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            task_id = await create(client, replica.url, "job_again", label="c-run", seconds=60)
            await wait_until(lambda: runs(redis_url, "c-run"))
            await call(client, replica.url, "tasks/cancel", {"taskId": task_id}, TASK_CAPS)
            done = await wait_status(client, replica.url, task_id, TERMINAL)
            assert done["status"] == "cancelled"
            await wait_until(lambda: queue_stats(redis_url)["depth"] == 0, what="drained")
        assert runs(redis_url, "c-run") == [worker.pid]
    finally:
        worker.kill()


async def test_sigkill_reruns_idempotent_and_fails_the_rest(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    doomed = start_worker(redis_url, log_dir, "doomed")
    survivor = None
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            again = await create(client, replica.url, "job_again", label="k-again", seconds=3)
            once = await create(client, replica.url, "job_once", label="k-once", seconds=3)
            await wait_until(lambda: runs(redis_url, "k-again") and runs(redis_url, "k-once"))
            doomed.kill()
            # Nobody runs the idempotent task while no worker lives, and it is not failed.
            assert (await get(client, replica.url, again))["status"] == "working"
            survivor = start_worker(redis_url, log_dir, "survivor")
            done_again = await wait_status(client, replica.url, again, TERMINAL)
            done_once = await wait_status(client, replica.url, once, TERMINAL)
        assert done_again["status"] == "completed", survivor.tail()
        assert runs(redis_url, "k-again") == [doomed.pid, survivor.pid]
        assert done_once["status"] == "failed"
        assert "stopped before it finished" in done_once["error"]["message"]
        assert runs(redis_url, "k-once") == [doomed.pid]  # at most once
        await wait_until(lambda: queue_stats(redis_url)["depth"] == 0, what="drained")
    finally:
        doomed.kill()
        if survivor is not None:
            survivor.kill()


async def test_sigterm_finishes_short_work_and_hands_back_the_rest(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    deploying = start_worker(redis_url, log_dir, "deploying", "--grace", "3")
    successor = None
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            short = await create(client, replica.url, "job_once", label="t-short", seconds=0.5)
            again = await create(client, replica.url, "job_again", label="t-again", seconds=8)
            once = await create(client, replica.url, "job_once", label="t-once", seconds=30)
            await wait_until(
                lambda: all(runs(redis_url, x) for x in ("t-short", "t-again", "t-once"))
            )
            deploying.terminate()
            assert deploying.proc.wait(60) == 0, deploying.tail()
            assert (await get(client, replica.url, short))["status"] == "completed"
            handed = await get(client, replica.url, again)
            assert handed["status"] == "working"
            assert handed.get("statusMessage") == "queued"
            failed = await get(client, replica.url, once)
            assert failed["status"] == "failed"
            assert "worker running this task was stopped" in failed["error"]["message"]
            stats = queue_stats(redis_url)
            assert stats["depth"] == 1 and stats["running"] == 0, stats
            assert "deploying" not in [w["name"] for w in stats["workers"]]
            successor = start_worker(redis_url, log_dir, "successor")
            done = await wait_status(client, replica.url, again, TERMINAL)
        assert done["status"] == "completed", successor.tail()
        assert runs(redis_url, "t-again") == [deploying.pid, successor.pid]
        assert runs(redis_url, "t-once") == [deploying.pid]
        assert runs(redis_url, "t-short") == [deploying.pid]
    finally:
        deploying.kill()
        if successor is not None:
            successor.kill()


async def test_non_idempotent_task_of_a_dead_worker_fails_with_no_worker_left(
    replica: Replica, redis_url: str, log_dir: Path
) -> None:
    """The replica's tasks/get fails it once the lease lapses, as for a dead replica;
    a worker that comes later acknowledges it without running it."""
    lone = start_worker(redis_url, log_dir, "lone")
    later = None
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            once = await create(client, replica.url, "job_once", label="l-once", seconds=30)
            await wait_until(lambda: runs(redis_url, "l-once"))
            lone.kill()
            failed = await wait_status(client, replica.url, once, TERMINAL)
            assert failed["status"] == "failed"
            later = start_worker(redis_url, log_dir, "later")
            await wait_until(lambda: queue_stats(redis_url)["depth"] == 0, what="drained")
        assert runs(redis_url, "l-once") == [lone.pid]
    finally:
        lone.kill()
        if later is not None:
            later.kill()


async def test_per_principal_cap_and_queue_depth(redis_url: str, log_dir: Path) -> None:
    state = redis_url[: -len("/0")] + "/1"  # a database of its own: counts start at zero
    capped = external_replica(state, log_dir, "--max-queued-tasks", "3")
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            ids = [
                await create(client, capped.url, "job_once", label=f"cap{i}", seconds=0)
                for i in range(3)
            ]
            refused = await call(
                client,
                capped.url,
                "tools/call",
                {"name": "job_once", "arguments": {"label": "cap3", "seconds": 0}},
                TASK_CAPS,
            )
            assert refused.status == 429
            assert refused.error["code"] == -31029
            assert "Too many unfinished tasks" in refused.error["message"]
            assert refused.error["data"] == {"queued": 3, "limit": 3}
            stats = queue_stats(state)
            assert stats["depth"] == 3 and stats["waiting"] == 3
            assert stats["unfinishedByPrincipal"] == {"": 3}
            await call(client, capped.url, "tasks/cancel", {"taskId": ids[0]}, TASK_CAPS)
            assert queue_stats(state)["unfinishedByPrincipal"] == {"": 2}
            await create(client, capped.url, "job_once", label="cap3", seconds=0)
            worker = start_worker(state, log_dir, "cap-worker")
            try:
                await wait_until(lambda: queue_stats(state)["depth"] == 0, what="drained")
            finally:
                worker.kill()
        assert queue_stats(state)["unfinishedByPrincipal"] == {}
    finally:
        capped.kill()


def test_external_workers_need_redis(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpkit",
            "serve",
            "tests/scaleout/worker_server.py",
            "--http",
            "--state",
            f"sqlite:///{tmp_path}/s.db",
            "--task-workers",
            "external",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 2
    assert "--task-workers external needs --state redis://" in out.stderr
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpkit",
            "worker",
            "tests/scaleout/worker_server.py",
            "--state",
            "memory:",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 2
    assert "redis://" in out.stderr
