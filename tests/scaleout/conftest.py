"""Clusters of real mcpkit replicas sharing one state backend.

``cluster`` is parametrized over the three backends: ``memory`` (one process: the
baseline), ``sqlite`` (two processes sharing one database file) and ``redis`` (three
processes sharing a real redis-server, behind a real nginx doing round-robin).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))

from services import TARGET, Cluster, nginx_round_robin, redis_server, start_replica

from support.servers import need


@pytest.fixture
def anyio_backend() -> str:
    """Real processes, Redis clients and nginx: asyncio only."""
    return "asyncio"


@pytest.fixture(scope="module", params=["memory", "sqlite", "redis"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    backend: str = request.param
    log_dir = tmp_path_factory.mktemp(f"cluster-{backend}")
    with ExitStack() as stack:
        if backend == "memory":
            state, count = "memory:", 1
        elif backend == "sqlite":
            state, count = f"sqlite:///{log_dir}/state.db", 2
        else:
            need("redis-server")
            need("nginx")
            state, count = stack.enter_context(redis_server()), 3
        replicas = []
        for _ in range(count):
            replica = start_replica(state, log_dir, TARGET)
            stack.callback(replica.kill)
            replicas.append(replica)
        front = replicas[0].url
        if backend == "redis":
            port = stack.enter_context(nginx_round_robin([r.port for r in replicas]))
            front = f"http://127.0.0.1:{port}/mcp"
        yield Cluster(backend, state, replicas, front, log_dir)
