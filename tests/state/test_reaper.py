"""Reaping expired records: expired rows are deleted (SQLite kept them forever, the memory
backend until someone read them), live ones are kept, one call deletes at most its batch,
Redis expires its keys itself, and a running server sweeps its store.

Records expire through a TTL of a few milliseconds and a short sleep past it; nothing here
asserts how long anything takes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcpkit import Server
from mcpkit.state import StateBackend, open_backend
from mcpkit.state.memory import MemoryBackend
from mcpkit.state.reaper import reap_all
from support.servers import redis_server

pytestmark = pytest.mark.anyio

EXPIRED, LIVE, FOREVER = 1_234, 100, 10
SHORT_TTL = 0.01
WAIT = 10.0  # generous upper bound for "it happens", never a performance claim


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateBackend]:
    url = "memory:" if request.param == "memory" else f"sqlite:///{tmp_path}/state.db"
    yield open_backend(url)


async def fill(backend: StateBackend) -> None:
    for i in range(EXPIRED):
        await backend.set(f"task:old-{i}", b"old", SHORT_TTL)
    for i in range(LIVE):
        await backend.set(f"task:live-{i}", b"live", 3600)
    for i in range(FOREVER):
        await backend.set(f"key:forever-{i}", b"kept")
    # Written with a TTL, then again without one: the later write wins.
    await backend.set("key:rewritten", b"short", SHORT_TTL)
    await backend.set("key:rewritten", b"kept")
    await anyio.sleep(SHORT_TTL * 5)


def stored_keys(backend: StateBackend) -> set[str]:
    """Every key physically held, expired or not (read past the interface on purpose:
    an expired record already reads as absent through it)."""
    if isinstance(backend, MemoryBackend):
        return set(backend._data)
    path = backend.url[len("sqlite:///") :]
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT key FROM kv")}


async def test_reaper_deletes_expired_records_and_keeps_live_ones(store: StateBackend) -> None:
    await fill(store)
    assert len(stored_keys(store)) == EXPIRED + LIVE + FOREVER + 1  # nothing freed yet
    assert await reap_all(store, batch=100) == EXPIRED
    keys = stored_keys(store)
    assert keys == (
        {f"task:live-{i}" for i in range(LIVE)}
        | {f"key:forever-{i}" for i in range(FOREVER)}
        | {"key:rewritten"}
    )
    assert await store.get("task:live-7") == b"live"
    assert await store.get("key:rewritten") == b"kept"
    assert await reap_all(store) == 0  # nothing left to do
    await store.aclose()


async def test_one_call_deletes_at_most_its_batch(store: StateBackend) -> None:
    await fill(store)
    assert await store.reap_expired(100) == 100
    assert len(stored_keys(store)) == EXPIRED - 100 + LIVE + FOREVER + 1
    await store.aclose()


async def test_a_running_server_sweeps_its_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/server.db"
    writer = open_backend(url)
    await fill(writer)
    await writer.aclose()
    server = Server("reaped", "1.0.0", state=url)
    async with server.running():
        with anyio.fail_after(WAIT):
            while any(key.startswith("task:old-") for key in stored_keys(server.state)):
                await anyio.sleep(0.05)
        assert {f"task:live-{i}" for i in range(LIVE)} <= stored_keys(server.state)
        assert await server.state.get("task:live-0") == b"live"


@pytest.fixture(scope="module")
def redis_port() -> Iterator[int]:
    with redis_server() as port:
        yield port


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_redis_expires_records_itself(redis_port: int) -> None:
    backend = open_backend(f"redis://127.0.0.1:{redis_port}/0")
    try:
        await backend.set("task:short", b"x", 30)
        await backend.set("task:forever", b"y")
        redis = backend.client  # type: ignore[attr-defined]
        ttl_ms = await redis.pttl("mcpkit:task:short")
        assert 0 < ttl_ms <= 30_000  # Redis holds the expiry and deletes the key itself
        assert await redis.pttl("mcpkit:task:forever") == -1
        assert await backend.reap_expired() == 0  # so the reaper has nothing to do
    finally:
        await backend.aclose()
