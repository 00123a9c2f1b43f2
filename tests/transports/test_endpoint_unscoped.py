"""The endpoint's scope-less request handle (``runtime.stepping.Unscoped``): a request
started without an anyio cancel scope is cancelled natively, with ``Task.cancel``.  On
Python 3.11 the task may be the reader that started the request, which goes on after it
(waiting for the end of input), so the handle undoes the cancellation it caused, as
``asyncio.timeout`` does: otherwise ``asyncio.timeout`` and task groups entered later in
that task would take a cancellation that is not theirs for their own."""

from __future__ import annotations

import asyncio

import pytest

from mcpkit.runtime.stepping import Unscoped

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_cancelled_request_leaves_its_task_not_cancelling() -> None:
    handle = Unscoped()
    reached: list[str] = []

    async def request() -> int:
        with handle:
            handle.cancel()  # as notifications/cancelled does: delivered on the next pass
            await asyncio.sleep(30)
            reached.append("not cancelled")
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    task = asyncio.get_running_loop().create_task(request())
    handle.task = task
    assert await task == 0
    assert reached == []
    assert handle.cancel_called


async def test_a_cancellation_it_did_not_cause_is_not_undone() -> None:
    handle = Unscoped()
    started = asyncio.Event()

    async def request() -> None:
        with handle:
            started.set()
            await asyncio.sleep(30)

    task = asyncio.get_running_loop().create_task(request())
    handle.task = task
    await started.wait()
    task.cancel()  # someone else's cancellation (shutdown): it propagates
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelling() == 1
