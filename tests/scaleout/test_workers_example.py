"""examples/task_workers.py runs as its docstring says: Redis, a queuing replica, a worker
and the example's own client."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scalekit import external_replica, queue_stats, start_worker
from services import ROOT, redis_server

from support.servers import need

EXAMPLE = "examples/task_workers.py"


def test_task_workers_example(tmp_path: Path) -> None:
    need("redis-server")
    with redis_server() as state:
        replica = external_replica(state, tmp_path, target=EXAMPLE)
        worker = start_worker(state, tmp_path, "example", target=EXAMPLE)
        try:
            out = subprocess.run(
                [sys.executable, EXAMPLE, replica.url],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=ROOT,
            )
            assert out.returncode == 0, out.stderr[-3000:] + worker.tail()
            lines = out.stdout.splitlines()
            assert lines == [
                f"resized 3 images of summer (worker pid {worker.pid})",
                f"charged 1250 cents for A-17 (worker pid {worker.pid})",
            ]
            assert queue_stats(state)["depth"] == 0
        finally:
            worker.kill()
            replica.kill()
