"""The SQLite backend's pub/sub: events published through one connection to the file (as
another process would) reach a subscriber of another, a process's own publish reaches its
own subscribers, and an idle poller leaves the database alone (it reads the events table
only when the write-ahead log changed, or every ``IDLE_POLL_S``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.state import open_backend
from mcpkit.state.sqlite import IDLE_POLL_S, SQLiteBackend

pytestmark = pytest.mark.anyio

WAIT = 10.0  # generous upper bound for "it arrives", never a performance claim


def backend(path: Path) -> SQLiteBackend:
    opened = open_backend(f"sqlite:///{path}")
    assert isinstance(opened, SQLiteBackend)
    return opened


class CountingReads:
    """Counts the poller's reads of the events table (the queries that select events)."""

    def __init__(self, target: SQLiteBackend) -> None:
        self.reads = 0
        original = target._run

        async def counted(fn: Any) -> Any:
            if getattr(fn, "__name__", "") == "fetch":
                self.reads += 1
            return await original(fn)

        target._run = counted  # type: ignore[method-assign]


async def test_an_event_from_another_connection_arrives(tmp_path: Path) -> None:
    listener, publisher = backend(tmp_path / "s.db"), backend(tmp_path / "s.db")
    try:
        async with listener.subscribe("changes") as events:
            await anyio.sleep(0.5)  # the poller has settled into idle ticks
            await publisher.publish("changes", b"first")
            await publisher.publish("other", b"not for us")
            await publisher.publish("changes", b"second")
            with anyio.fail_after(WAIT):
                assert await events.__anext__() == b"first"
                assert await events.__anext__() == b"second"
    finally:
        await listener.aclose()
        await publisher.aclose()


async def test_a_publish_reaches_the_same_process_subscribers(tmp_path: Path) -> None:
    own = backend(tmp_path / "s.db")
    try:
        async with own.subscribe("changes") as events:
            await anyio.sleep(0.5)
            await own.publish("changes", b"mine")
            with anyio.fail_after(WAIT):
                assert await events.__anext__() == b"mine"
    finally:
        await own.aclose()


async def test_a_publish_wakes_this_process_poller_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ticks an hour apart, only the publish itself can wake the poller."""
    import mcpkit.state.sqlite as sqlite_module

    for name in ("POLL_S", "IDLE_TICK_MAX_S", "IDLE_POLL_S"):
        monkeypatch.setattr(sqlite_module, name, 3600.0)
    own = backend(tmp_path / "s.db")
    try:
        async with own.subscribe("changes") as events:
            await anyio.sleep(0.3)  # the first read is done; the next tick is an hour away
            await own.publish("changes", b"now")
            with anyio.fail_after(WAIT):
                assert await events.__anext__() == b"now"
    finally:
        await own.aclose()


async def test_an_idle_poller_does_not_read_the_database(tmp_path: Path) -> None:
    idle = backend(tmp_path / "s.db")
    counter = CountingReads(idle)
    try:
        async with idle.subscribe("changes"):
            await anyio.sleep(0.3)  # the first read, then nothing changes
            settled = counter.reads
            await anyio.sleep(1.0)
            # 50 ms ticks used to read the table ~20 times a second; now at most the
            # safety read every IDLE_POLL_S.
            assert IDLE_POLL_S >= 1.0
            assert counter.reads - settled <= 1, counter.reads - settled
    finally:
        await idle.aclose()
