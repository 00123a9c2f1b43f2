"""Helpers for the task-worker tests: real ``mcpkit serve --task-workers external``
replicas and ``mcpkit worker`` processes on a real redis-server.

Everything is a child process on 127.0.0.1; the tests read Redis directly (redis-py) to
see what ran where, and talk to the replicas over HTTP with :mod:`wire`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import redis
from services import Replica, _start, start_replica, stop
from wire import TASKS, call

from support.servers import tail

TARGET = "tests/scaleout/worker_server.py"
LEASE_S = "2"
TASK_CAPS: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS: {}}}
TERMINAL = {"completed", "failed", "cancelled"}


def external_replica(state: str, log_dir: Path, *extra: str, target: str = TARGET) -> Replica:
    """A replica that only queues task work (``--task-workers external``)."""
    return start_replica(
        state, log_dir, target, "--task-workers", "external", *extra, MCPKIT_TASK_LEASE_S=LEASE_S
    )


@dataclass
class WorkerProc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self, lines: int = 40) -> str:
        return tail(self.log, lines)

    def kill(self) -> None:
        stop(self.proc, signal.SIGKILL)

    def terminate(self) -> None:
        """SIGTERM to the worker process only (a deploy), without waiting."""
        self.proc.send_signal(signal.SIGTERM)


def start_worker(
    state: str, log_dir: Path, name: str, *extra: str, target: str = TARGET
) -> WorkerProc:
    log = log_dir / f"worker-{name}.log"
    proc = _start(
        [
            sys.executable,
            "-m",
            "mcpkit",
            "worker",
            target,
            "--state",
            state,
            "--name",
            name,
            *extra,
        ],
        log,
        {"MCPKIT_TASK_LEASE_S": LEASE_S},
    )
    return WorkerProc(name, proc, log)


def queue_stats(state: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "mcpkit", "worker", "--stats", "--state", state],
        capture_output=True,
        check=True,
        text=True,
        timeout=60,
    )
    stats: dict[str, Any] = json.loads(out.stdout)
    return stats


def runs(state: str, label: str) -> list[int]:
    """The pids that started the tool body for ``label`` (see worker_server.py)."""
    client = redis.Redis.from_url(state)
    try:
        raw = client.get(f"mcpkit:runs:{label}")
    finally:
        client.close()
    return [] if raw is None else list(json.loads(raw))


def record(state: str, task_id: str) -> dict[str, Any]:
    """The stored task record (private fields included)."""
    client = redis.Redis.from_url(state)
    try:
        raw = client.get(f"mcpkit:task:{task_id}")
    finally:
        client.close()
    assert raw is not None, f"no record for {task_id}"
    data: dict[str, Any] = json.loads(raw)
    return data


async def create(client: httpx.AsyncClient, url: str, tool: str, **arguments: Any) -> str:
    reply = await call(client, url, "tools/call", {"name": tool, "arguments": arguments}, TASK_CAPS)
    result = reply.result
    assert result["resultType"] == "task", result
    return str(result["taskId"])


async def get(client: httpx.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    return (await call(client, url, "tasks/get", {"taskId": task_id}, TASK_CAPS)).result


async def wait_status(
    client: httpx.AsyncClient, url: str, task_id: str, wanted: set[str], limit: float = 60
) -> dict[str, Any]:
    with anyio.fail_after(limit):
        while True:
            result = await get(client, url, task_id)
            if result["status"] in wanted:
                return result
            await anyio.sleep(0.1)


async def wait_until(check: Any, limit: float = 60, what: str = "condition") -> None:
    """Poll ``check()`` (sync) until true; ``limit`` only bounds a hang (no timing claim)."""
    with anyio.fail_after(limit):
        while not check():
            await anyio.sleep(0.1)
