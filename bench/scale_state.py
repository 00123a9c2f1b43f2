"""Reaping at scale (issue #23): expired state records and idle legacy sessions.

    python -m bench.scale_state               # a table
    python -m bench.scale_state --json out.json

* **Expired records** (SQLite and memory; Redis expires keys itself): 100,000 expired
  task-sized records and 1,000 live ones, then :func:`mcpkit.state.reaper.reap_all`.
  Reported: the longest and the median batch (a request waits behind at most one batch),
  the whole sweep, and the worst ``get`` of a live record made while the sweep ran,
  against the worst of as many ``get`` calls on the idle store.  ``before``: the same
  100,000 rows deleted by one statement, what reaping without batches would hold the
  store for.
* **Legacy sessions**: 10,000 live 2025-11-25 sessions in one
  :class:`~mcpkit.transports.http.sessions.SessionStore` (in process: the store is what
  grows), the cost of one reap pass that finds nothing to drop (it runs at most every 5 s,
  on a new session) and of the pass that drops all of them once idle.  The RSS per
  session over HTTP is measured by ``python -m bench.scale_streams --kinds sessions``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

EXPIRED, LIVE = 100_000, 1_000
SESSIONS = 10_000
RECORD = (
    b'{"taskId":"task_%06d","status":"completed","createdAt":"2026-12-01T18:00:00Z",'
    b'"ttl":3600000,"result":{"content":[{"type":"text","text":"done"}]}}'
)


async def fill(backend: Any) -> None:
    """Expired and live records, written fast (straight into the store, bypassing
    ``set``: 100,000 single writes would measure the fill, not the reaper)."""
    now = time.time()
    expired = [(f"task:old-{i}", RECORD % i, now - 1) for i in range(EXPIRED)]
    live = [(f"task:live-{i}", RECORD % i, now + 3600) for i in range(LIVE)]
    from mcpkit.state.sqlite import SQLiteBackend

    if isinstance(backend, SQLiteBackend):

        def op(c: Any) -> None:
            c.execute("BEGIN")
            c.executemany(
                "INSERT OR REPLACE INTO kv(key, value, expires) VALUES(?,?,?)", expired + live
            )
            c.execute("COMMIT")

        await backend._run(op)
    else:
        import heapq

        for key, value, expires in expired + live:
            backend._data[key] = (value, expires)
            heapq.heappush(backend._expiries, (expires, key))


class TimedLock:
    """The SQLite backend's lock, recording how long each holder kept it (wall and the
    holding thread's CPU time): the pause every other request on the store waits out."""

    def __init__(self, lock: Any) -> None:
        self.lock = lock
        self.holds: list[tuple[float, float]] = []
        self.recording = False

    def __enter__(self) -> None:
        self.lock.acquire()
        self.t0, self.c0 = time.perf_counter(), time.thread_time()

    def __exit__(self, *exc: object) -> None:
        if self.recording:
            self.holds.append((time.perf_counter() - self.t0, time.thread_time() - self.c0))
        self.lock.release()


async def worst_get(backend: Any, stop: anyio.Event, out: list[float]) -> None:
    i = 0
    while not stop.is_set():
        t0 = time.perf_counter()
        assert await backend.get(f"task:live-{i % LIVE}") is not None
        out.append(time.perf_counter() - t0)
        i += 1
        await anyio.sleep(0)


async def reap_point(url: str) -> dict[str, float]:
    from mcpkit.state import open_backend
    from mcpkit.state.reaper import BATCH

    backend = open_backend(url)
    await fill(backend)
    lock = None
    if hasattr(backend, "_lock"):
        lock = backend._lock = TimedLock(backend._lock)
    idle: list[float] = []
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(worst_get, backend, stop, idle)
        await anyio.sleep(0.5)
        stop.set()
    batches: list[float] = []
    cpu: list[float] = []
    during: list[float] = []
    stop = anyio.Event()
    deleted = 0
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(worst_get, backend, stop, during)
        while True:  # reap_all's loop, with each batch timed
            b0, c0 = time.perf_counter(), time.thread_time()
            if lock is not None:
                lock.holds.clear()
                lock.recording = True
            n = await backend.reap_expired(BATCH)
            if lock is not None:  # the statement's hold of the store, not the hop to it
                lock.recording = False
                hold = max(lock.holds)  # the batch's (a get's is ~50 µs)
                batches.append(hold[0])
                cpu.append(hold[1])
            else:  # in the loop's own thread: the whole call holds it
                batches.append(time.perf_counter() - b0)
                cpu.append(time.thread_time() - c0)
            deleted += n
            if n < BATCH:
                break
            await anyio.sleep(0)
        stop.set()
    sweep = time.perf_counter() - t0
    assert deleted == EXPIRED, deleted
    # before: the same rows, one statement
    await fill(backend)
    b0, c0 = time.perf_counter(), time.thread_time()
    if lock is not None:
        lock.recording = True
    assert await backend.reap_expired(10 * EXPIRED) == EXPIRED
    one_shot, one_cpu = time.perf_counter() - b0, time.thread_time() - c0
    if lock is not None:
        one_shot, one_cpu = max(lock.holds)
    await backend.aclose()
    return {
        "batch_max_ms": max(batches) * 1000,
        "batch_median_ms": statistics.median(batches) * 1000,
        "batch_cpu_max_ms": max(cpu) * 1000,
        "one_statement_cpu_ms": one_cpu * 1000,
        "batches": len(batches),
        "sweep_ms": sweep * 1000,
        "get_worst_idle_ms": max(idle) * 1000,
        "get_worst_during_ms": max(during) * 1000,
        "gets_during": len(during),
        "one_statement_ms": one_shot * 1000,
    }


def sessions_point() -> dict[str, float]:
    from mcpkit.transports.http.sessions import SessionStore

    async def run() -> dict[str, float]:
        store = SessionStore(max_sessions=2 * SESSIONS, idle_s=1800)
        for _ in range(SESSIONS):
            assert await store.create(None) is not None
        passes = []
        for _ in range(20):
            t0 = time.perf_counter()
            assert store.reap() == 0
            passes.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        dropped = store.reap(time.monotonic() + 3600)  # all of them idle for an hour
        drop_all = time.perf_counter() - t0
        assert dropped == SESSIONS and len(store) == 0
        return {
            "sessions": SESSIONS,
            "reap_nothing_ms": statistics.median(passes) * 1000,
            "reap_all_ms": drop_all * 1000,
        }

    return anyio.run(run)


def measure(progress: Any = None) -> dict[str, Any]:
    say = progress or (lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    results: dict[str, Any] = {"reaper": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, url in (("sqlite", f"sqlite:///{tmp}/reap.db"), ("memory", "memory:")):
            say(f"scale: reaping {EXPIRED:,} expired records ({name})")
            results["reaper"][name] = anyio.run(reap_point, url)
    say(f"scale: reaping among {SESSIONS:,} legacy sessions")
    results["sessions"] = sessions_point()
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        f"reaping {EXPIRED:,} expired records (+{LIVE:,} live), batches of 500:",
        "backend  batch: max (CPU max)  median   sweep    worst get idle / during   "
        "one statement (CPU)",
    ]
    for name, r in results["reaper"].items():
        lines.append(
            f"{name:<7}  {r['batch_max_ms']:6.1f} ({r['batch_cpu_max_ms']:4.1f}) ms  "
            f"{r['batch_median_ms']:5.2f} ms  {r['sweep_ms']:5.0f} ms  "
            f"{r['get_worst_idle_ms']:6.1f} / {r['get_worst_during_ms']:6.1f} ms   "
            f"{r['one_statement_ms']:6.0f} ({r['one_statement_cpu_ms']:.0f}) ms"
        )
    s = results["sessions"]
    lines.append(
        f"legacy sessions: {s['sessions']:,} live; a reap pass that drops nothing "
        f"{s['reap_nothing_ms']:.2f} ms, dropping all {s['reap_all_ms']:.1f} ms"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = measure()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
