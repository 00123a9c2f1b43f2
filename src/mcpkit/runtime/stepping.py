"""Run a coroutine's first step by hand, and finish it later if it suspended.

Hot-path trick shared by the HTTP transport and the stdio endpoint: most requests never
really suspend (a plain ``def`` tool returns at once), so they need no task, watcher or
cancel scope of their own.  :func:`run_until_suspended` runs the first step;
only a coroutine that does wait is finished with ``await Resumed(coro, yielded)``.
:class:`Unscoped` is what such a request has instead of a cancel scope.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def run_until_suspended(coro: Coroutine[Any, Any, T]) -> tuple[bool, Any]:
    """Run ``coro`` up to its first suspension: ``(True, result)`` when it finished,
    ``(False, yielded)`` when it is waiting (finish it with ``await Resumed(coro, yielded)``).
    Exceptions it raises propagate."""
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        return True, stop.value
    return False, yielded


def on_asyncio() -> bool:
    """Whether an asyncio loop runs in this thread: what ``sniffio.current_async_library()
    == "asyncio"`` answers for code under anyio, without its ~0.3 µs of lookups (raising
    only off asyncio, where nothing calls this on a hot path)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def new_task(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A plain asyncio task for ``coro`` in a copy of the current context.  On Python
    3.12+ it starts eagerly (``eager_start=True``, public since 3.12): the first step runs
    now, already as the task itself, so anything the coroutine ties to its task (a cancel
    scope, a lock, a context variable) belongs to the task that finishes it, and one that
    never waits costs no trip through the event loop.  On 3.11 it is an ordinary task
    (the endpoint does not use it there, see ``Endpoint._serve_here``)."""
    loop = asyncio.get_running_loop()
    if EAGER:
        return asyncio.Task(coro, loop=loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]
    return loop.create_task(coro)


#: Python 3.12+: a task can take its first step at once (``eager_start``).
EAGER = sys.version_info >= (3, 12)


class Resumed(Generic[T]):
    """Awaiting this finishes a coroutine that :func:`run_until_suspended` started.

    It passes every value and exception (cancellation included) straight through, as
    ``await coro`` would.  The HTTP transport finishes the coroutine in the task that
    started it; the stdio endpoint in a new task (see ``Endpoint.starts_inline`` for what
    makes that safe), or on Python 3.11 in the reader task that started it, which then
    stops reading (``Endpoint._serve_here``).  Rule for callers: enter any cancel scope
    meant to cover the coroutine *before* its first step, never between the first step
    and this await (a scope the coroutine entered and is suspended in must stay the
    innermost one).
    """

    __slots__ = ("_context", "_coro", "_yielded")

    def __init__(
        self,
        coro: Coroutine[Any, Any, T],
        yielded: Any,
        context: contextvars.Context | None = None,
    ) -> None:
        self._coro = coro
        self._yielded = yielded
        #: The context the first step ran in (``context.run``): every later step runs in
        #: it too, so the coroutine sees its own context variables in whatever task
        #: finishes it.  None: the awaiting task's own context.
        self._context = context

    def __await__(self) -> Generator[Any, Any, T]:
        coro, value, context = self._coro, self._yielded, self._context
        send: Callable[[Any], Any] = coro.send
        throw: Callable[[BaseException], Any] = coro.throw
        if context is not None:
            run = context.run

            def send(value: Any) -> Any:
                return run(coro.send, value)

            def throw(exc: BaseException) -> Any:
                return run(coro.throw, exc)

        while True:
            try:
                sent = yield value
            except BaseException as exc:  # delivered into the coroutine, as `await` would
                try:
                    value = throw(exc)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
            else:
                try:
                    value = send(sent)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]


class Unscoped:
    """What ``Endpoint._serve`` needs of a cancel scope, for a request started inline
    (see ``Endpoint.starts_inline``): nothing can cancel it during its first step (the
    reader is busy running it); once it waits, it runs in an asyncio task (its own, or on
    Python 3.11 the reader that started it), which :meth:`cancel` cancels while the
    handler is still inside.  Like a cancel scope, leaving swallows the cancellation it
    caused."""

    __slots__ = ("_cancelled_task", "_inside", "cancel_called", "task")

    def __init__(self) -> None:
        self.cancel_called = False
        self.task: asyncio.Task[Any] | None = None
        self._inside = False
        self._cancelled_task = False

    def __enter__(self) -> Unscoped:
        self._inside = True
        if self.cancel_called and self.task is not None:
            # Cancelled before its task's first step (both lines came in one read):
            # deliver it now, as a cancel scope cancelled before it is entered does.
            self._cancelled_task = True
            self.task.cancel()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> bool:
        self._inside = False
        swallow = (
            self.cancel_called
            and exc_type is not None
            and issubclass(exc_type, asyncio.CancelledError)
        )
        if swallow and self._cancelled_task and self.task is not None:
            # As asyncio.timeout does: the task may go on (the reader that served this
            # request on Python 3.11), so it must not stay marked as being cancelled.
            self.task.uncancel()
        return swallow

    def cancel(self) -> None:
        """Cancel the request (``notifications/cancelled``, the end of input): its task,
        once the request runs in one; a request still in its first step sees it as soon
        as it is entered or waits."""
        self.cancel_called = True
        if self._inside and self.task is not None:
            # On the next loop pass, not now: a task cancelled before its first step never
            # runs, and the request's own code (its finally blocks, our bookkeeping) would
            # never see the cancellation.  Its first step was scheduled before this.
            self.task.get_loop().call_soon(self._cancel_task)

    def _cancel_task(self) -> None:
        if self._inside and self.task is not None:
            self._cancelled_task = True
            self.task.cancel()
