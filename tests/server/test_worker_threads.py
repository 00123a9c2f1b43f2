"""Plain ``def`` tools run in worker threads (``mcpkit.runtime.threads``): results,
errors, a caller's cancellation, the concurrency bound, context variables, progress sent
from the thread, the batched hand-back, and the trio fallback (anyio's workers).

The tool tests run a real client in memory (the stdio route) on asyncio and trio; the
transport tests serve ``tests/servers/threads_server.py`` over real pipes and a real
socket.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import os
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from mcpkit import Context, Server
from mcpkit.client import Client
from mcpkit.runtime import threads
from mcpkit.runtime.threads import current_pool, run_sync
from mcpkit.server import CallNext, Middleware, ToolError
from support.mcp import first_text
from support.servers import SERVERS_DIR, ProcessServer, http_subprocess, serve_argv

THREADS_SERVER = SERVERS_DIR / "threads_server.py"
WORKER = "mcpkit-worker"
#: Seconds a test waits for a thread to reach a point before it fails.
PATIENCE = 20

_caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="unset")


class SetsCaller(Middleware):
    """Sets a context variable around every call, as a tracing middleware does."""

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        _caller.set(f"request {ctx.params.get('name')}")
        return await call_next(ctx)


class Gates:
    """Threading events the tools of :func:`make_server` wait on and set."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.outcomes: list[str] = []


def make_server(gates: Gates) -> Server:
    server = Server("threads", middleware=[SetsCaller()])

    class RecordsOutcome(Middleware):
        async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            try:
                result = await call_next(ctx)
            except anyio.get_cancelled_exc_class():
                gates.outcomes.append(f"{ctx.params.get('name')} cancelled")
                raise
            gates.outcomes.append(f"{ctx.params.get('name')} answered")
            return result

    server.add_middleware(RecordsOutcome())

    @server.tool
    def thread_name() -> str:
        return threading.current_thread().name

    @server.tool
    def fails() -> str:
        raise ValueError("boom")

    @server.tool
    def refuses() -> str:
        raise ToolError("not today")

    @server.tool
    def caller() -> str:
        return _caller.get()

    @server.tool
    def blocks() -> str:
        gates.started.set()
        released = gates.release.wait(timeout=PATIENCE)
        gates.finished.set()
        return "released" if released else "never released"

    @server.tool
    def reports(ctx: Context) -> str:
        anyio.from_thread.run(ctx.report_progress, 1, 2, "half way")
        return "reported"

    return server


def test_inline_is_the_one_spelling_of_the_choice() -> None:
    server = Server("spelling")
    with pytest.raises(TypeError, match="unexpected keyword argument 'threaded'"):
        server.tool(threaded=False)  # type: ignore[call-overload]
    server.tool(inline=True)(lambda: "on the loop")
    assert not server.tools["<lambda>"].threaded


async def wait_for(event: threading.Event) -> None:
    assert await anyio.to_thread.run_sync(event.wait, PATIENCE), "the thread never got there"


async def test_results_errors_and_the_thread_a_call_runs_in(anyio_backend: str) -> None:
    loop_thread = threading.current_thread().name
    async with Client(make_server(Gates())) as client:
        name = first_text(await client.call_tool("thread_name"))
        failed = await client.call_tool("fails")
        refused = await client.call_tool("refuses")
    if anyio_backend == "asyncio":
        assert name == WORKER
    else:  # trio: anyio's worker threads
        assert name not in (WORKER, loop_thread)
    assert failed["isError"] is True
    assert first_text(failed) == "Error executing tool fails: boom"
    assert refused["isError"] is True and first_text(refused) == "not today"


async def test_context_variables_and_progress_reach_the_thread(anyio_backend: str) -> None:
    progress: list[dict[str, Any]] = []
    async with Client(make_server(Gates())) as client:
        seen = first_text(await client.call_tool("caller"))
        reported = first_text(await client.call_tool("reports", on_progress=progress.append))
    assert seen == "request caller"
    assert reported == "reported"
    assert [(p["progress"], p.get("total"), p.get("message")) for p in progress] == [
        (1, 2, "half way")
    ]


async def test_a_cancelled_call_stops_waiting_and_its_thread_runs_to_its_end(
    anyio_backend: str,
) -> None:
    gates = Gates()
    async with Client(make_server(gates)) as client:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "blocks")
                await wait_for(gates.started)
                scope.cancel()
        # The server gave up on the call while its thread still waits; it serves others.
        assert first_text(await client.call_tool("caller")) == "request caller"
        assert not gates.finished.is_set()
        assert gates.outcomes[0] == "blocks cancelled"
        gates.release.set()
        await wait_for(gates.finished)
        assert first_text(await client.call_tool("thread_name"))
    assert gates.outcomes == ["blocks cancelled", "caller answered", "thread_name answered"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_at_most_limit_calls_run_at_once(anyio_backend: str) -> None:
    pool = current_pool()
    pool.limit = 2
    lock = threading.Lock()
    running: list[int] = []
    most = [0]
    release = threading.Event()

    def job(n: int) -> int:
        with lock:
            running.append(n)
            most[0] = max(most[0], len(running))
        release.wait(timeout=PATIENCE)
        with lock:
            running.remove(n)
        return n

    futures = [pool.submit(functools.partial(job, n)) for n in range(5)]
    try:
        while len(running) < 2:
            await anyio.sleep(0.01)
        assert pool.threads == 2  # the other three wait in the queue
        release.set()
        assert [await f for f in futures] == [0, 1, 2, 3, 4]
    finally:
        release.set()
        pool.limit = 40
    assert most == [2]
    with pytest.raises(ValueError, match="positive integer"):
        pool.limit = 0


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_call_behind_a_blocked_worker_gets_a_thread_of_its_own(
    anyio_backend: str,
) -> None:
    pool = current_pool()
    release = threading.Event()
    blocked = pool.submit(functools.partial(release.wait, PATIENCE))
    try:
        while pool.threads < 1:
            await anyio.sleep(0.01)
        assert await pool.submit(threading.get_ident) != threading.get_ident()
        assert not blocked.done()  # the first call still holds its thread
    finally:
        release.set()
    assert await blocked is True


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_results_finished_together_come_back_in_one_wake_up(anyio_backend: str) -> None:
    pool = current_pool()
    calls = 8
    everyone = threading.Barrier(calls + 1)

    def job(n: int) -> int:
        everyone.wait(timeout=PATIENCE)
        return n * n

    futures = [pool.submit(functools.partial(job, n)) for n in range(calls)]
    while pool.threads < calls:  # every call blocks: each gets a thread of its own
        await anyio.sleep(0.01)
    before = pool.wakeups
    # The loop's thread waits here, so every result is finished before the loop runs.
    everyone.wait(timeout=PATIENCE)
    for _ in range(PATIENCE * 1000):
        if pool.ready == calls:
            break
        threading.Event().wait(0.001)
    assert pool.ready == calls
    assert [await f for f in futures] == [n * n for n in range(calls)]
    assert pool.wakeups - before == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_abandoned_call_not_yet_started_never_starts(anyio_backend: str) -> None:
    pool = current_pool()
    pool.limit = 1
    release = threading.Event()
    ran: list[str] = []

    def first() -> str:
        release.wait(timeout=PATIENCE)
        return "first"

    try:
        held = pool.submit(first)
        queued = pool.submit(functools.partial(ran.append, "queued"))
        queued.cancel()
        release.set()
        assert await held == "first"
        assert await run_sync(lambda: "after") == "after"  # behind the abandoned one
    finally:
        release.set()
        pool.limit = 40
    assert ran == []


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policies")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_workers_run_behind_the_loop(anyio_backend: str) -> None:
    # Woken by a call, a worker does not preempt the loop's thread on its core.
    policy = await run_sync(functools.partial(os.sched_getscheduler, 0))
    assert policy & ~os.SCHED_RESET_ON_FORK == os.SCHED_BATCH
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the loop's own thread


async def test_run_sync_raises_what_the_function_raised(anyio_backend: str) -> None:
    def fails() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await run_sync(fails)
    assert await run_sync(lambda: threading.current_thread().name) != (
        threading.current_thread().name
    )


async def test_a_stop_iteration_from_the_function_is_raised_as_a_runtime_error(
    anyio_backend: str,
) -> None:
    with pytest.raises(RuntimeError, match="StopIteration"):  # an awaitable cannot carry it
        await run_sync(lambda: next(iter(())))


def test_a_closed_loops_pool_is_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    # A process that runs one loop after another (a test suite, a CLI) keeps at most the
    # last closed loop's pool; the loops before it are freed once their workers leave.
    monkeypatch.setattr(threads, "IDLE_SECONDS", 0.05)
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def one_call() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        assert await run_sync(lambda: 7) == 7

    for _ in range(3):
        asyncio.run(one_call())
    give_up = time.monotonic() + PATIENCE
    while any(ref() is not None for ref in loops[:2]) and time.monotonic() < give_up:
        gc.collect()
        time.sleep(0.02)
    assert [ref() is None for ref in loops[:2]] == [True, True]


# ---------------------------------------------------------------- over real transports


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessServer]:
    with http_subprocess(tmp_path_factory.mktemp("threads-http"), THREADS_SERVER) as running:
        yield running


async def release_while_waiting(client: Client) -> dict[str, str]:
    """Call ``wait_for_release`` and ``release`` at once (each waits for the other)."""
    got: dict[str, str] = {}

    async def call(name: str) -> None:
        got[name] = first_text(await client.call_tool(name))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "release")
        tg.start_soon(call, "wait_for_release")
    got["thread"] = first_text(await client.call_tool("thread_name"))
    return got


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_blocking_def_tools_do_not_hold_each_other_over_stdio(
    anyio_backend: str, tmp_path: Path
) -> None:
    async with Client(serve_argv(THREADS_SERVER)) as client:
        got = await release_while_waiting(client)
    assert got == {"wait_for_release": "released", "release": "done", "thread": WORKER}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_blocking_def_tools_do_not_hold_each_other_over_http(
    anyio_backend: str, http_server: ProcessServer
) -> None:
    async with Client(http_server.url) as client:
        got = await release_while_waiting(client)
    assert got == {"wait_for_release": "released", "release": "done", "thread": WORKER}
