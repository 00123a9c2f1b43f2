"""The request runner's contract (``runtime/runner.py``), on asyncio and on trio: a request
starts at once in the task that finishes it, runs in a copy of its starter's context,
is cancelled at its next wait by its handle, and settles swallowing only the cancellation
its handle caused."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import anyio
import pytest

from mcpkit.runtime.runner import Handle, Runner, Watch, new_handle, new_runner, run

pytestmark = pytest.mark.anyio

_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="starter")


async def outcome_of(
    coro: Coroutine[Any, Any, Any],
    handle: Handle | None = None,
    watch: Watch | None = None,
    *,
    suspends: bool = False,
) -> tuple[bool, Any]:
    """What :func:`run` comes to, awaited when it is not there at once."""
    ran = run(coro, handle, watch, suspends=suspends)
    return ran if isinstance(ran, tuple) else await ran


async def nothing_more() -> None:
    """The work a reader hands on when a request keeps its task: none, in these tests."""


async def start(
    runner: Runner, body: Callable[[Handle], Coroutine[Any, Any, None]]
) -> tuple[Handle, bool]:
    handle = runner.new_handle()

    async def request() -> None:
        with handle:
            await body(handle)

    return handle, await runner.start(request(), nothing_more)


async def test_a_request_that_never_waits_is_done_when_start_returns(anyio_backend: str) -> None:
    done: list[str] = []

    async def body(handle: Handle) -> None:
        done.append("done")

    async with anyio.create_task_group() as tg:
        runner = new_runner(tg)
        _, handed_on = await start(runner, body)
        if anyio_backend == "asyncio":  # its first step ran here: no task, no loop pass
            assert done == ["done"] and not handed_on
    assert done == ["done"]


async def test_what_a_first_step_ties_to_its_task_stays_with_the_task_that_finishes_it(
    anyio_backend: str,
) -> None:
    tasks: list[int] = []
    lock = anyio.Lock()

    async def body(handle: Handle) -> None:
        async with lock:  # owned by the task that took it
            with anyio.CancelScope():  # must be left in the task that entered it
                tasks.append(anyio.get_current_task().id)
                await anyio.sleep(0.01)
                tasks.append(anyio.get_current_task().id)

    async with anyio.create_task_group() as tg:
        runner = new_runner(tg)
        await start(runner, body)
    assert len(tasks) == 2 and tasks[0] == tasks[1]


async def test_a_request_runs_in_a_copy_of_its_starters_context(anyio_backend: str) -> None:
    read: list[tuple[str, str]] = []

    def request_named(name: str) -> Callable[[Handle], Coroutine[Any, Any, None]]:
        async def body(handle: Handle) -> None:
            before = _seen.get()
            _seen.set(name)
            await anyio.sleep(0)
            read.append((before, _seen.get()))

        return body

    async with anyio.create_task_group() as tg:
        runner = new_runner(tg)
        _seen.set("reader")
        await start(runner, request_named("first"))
        await start(runner, request_named("second"))
    assert sorted(read) == [("reader", "first"), ("reader", "second")]
    assert _seen.get() == "reader"


async def test_a_cancelled_request_settles_and_its_task_goes_on(anyio_backend: str) -> None:
    handle = new_handle()
    reached: list[str] = []

    async def request() -> str:
        handle.cancel()  # cancelled before it waits: delivered at its first wait
        try:
            await anyio.sleep(30)
        finally:
            reached.append("cleaned up")
        return "never"

    finished, value = await outcome_of(request(), handle)
    assert (finished, value) == (False, None)
    assert reached == ["cleaned up"] and handle.cancel_called
    await anyio.sleep(0)  # the task is not left cancelled: it can wait again
    if anyio_backend == "asyncio":
        import asyncio

        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0


async def test_a_request_that_swallows_its_cancellation_still_counts_as_cancelled(
    anyio_backend: str,
) -> None:
    handle = new_handle()

    async def request() -> str:
        with contextlib.suppress(anyio.get_cancelled_exc_class()):
            handle.cancel()
            await anyio.sleep(30)
        return "answer nobody wants"

    finished, _ = await outcome_of(request(), handle)
    assert not finished
    await anyio.sleep(0)


async def test_a_cancellation_the_handle_did_not_cause_goes_on(anyio_backend: str) -> None:
    handle = new_handle()
    with anyio.CancelScope() as outer:
        outer.cancel()  # someone else's (a shutdown)
        await outcome_of(anyio.sleep(30), handle)
        pytest.fail("the outer cancellation was swallowed")  # pragma: no cover
    assert outer.cancelled_caught and not handle.cancel_called


async def test_cancel_from_another_task_reaches_the_waiting_request(anyio_backend: str) -> None:
    handle = new_handle()
    started = anyio.Event()
    outcome: list[tuple[bool, object]] = []

    async def request() -> str:
        started.set()
        await anyio.sleep(30)
        return "never"

    async def caller() -> None:
        outcome.append(await outcome_of(request(), handle))

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller)
        await started.wait()
        handle.cancel()
    assert outcome == [(False, None)]


async def test_a_shielded_step_is_not_interrupted(anyio_backend: str) -> None:
    handle = new_handle()
    inside = anyio.Event()
    steps: list[str] = []

    async def request() -> str:
        with anyio.CancelScope(shield=True):
            inside.set()
            await anyio.sleep(0.05)
            steps.append("shielded step done")
        await anyio.sleep(30)
        return "never"

    async def caller() -> None:
        await outcome_of(request(), handle)

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller)
        await inside.wait()
        handle.cancel()
    assert steps == ["shielded step done"]


async def test_the_watch_covers_a_request_that_waits_and_on_asyncio_only_that(
    anyio_backend: str,
) -> None:
    entered: list[str] = []

    @contextlib.contextmanager
    def watch(handle: Handle) -> Iterator[None]:
        entered.append("watch")
        yield

    async def immediate() -> str:
        return "now"

    async def later() -> str:
        await anyio.sleep(0)
        return "later"

    if anyio_backend == "asyncio":  # its first step ran by hand: the outcome at once
        assert run(immediate(), None, watch) == (True, "now")
        assert entered == []
    assert await outcome_of(later(), None, watch) == (True, "later")
    assert entered[-1:] == ["watch"]
    entered.clear()
    assert await outcome_of(immediate(), None, watch, suspends=True) == (True, "now")
    assert entered == ["watch"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_on_asyncio_a_waiting_request_keeps_its_task_and_work_is_handed_on(
    anyio_backend: str,
) -> None:
    order: list[str] = []

    async def body(handle: Handle) -> None:
        order.append("request waits")
        await anyio.sleep(0.01)
        order.append("request done")

    async def hand_on() -> None:
        order.append("reading goes on")

    async with anyio.create_task_group() as tg:
        runner = new_runner(tg)
        handle = runner.new_handle()

        async def request() -> None:
            with handle:
                await body(handle)

        assert await runner.start(request(), hand_on)
    assert order == ["request waits", "reading goes on", "request done"]
