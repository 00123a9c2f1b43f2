"""The request runner: the one way a request starts, is cancelled and settles.

stdio and the in-memory transport start each request with :meth:`Runner.start`
(concurrently with reading the next lines); an HTTP request runs in its own ASGI task
with :func:`run`.  The strategy, never the transport, decides how a request starts.
(``Server.call`` awaits a request in its caller's task: only that caller can cancel it,
so it needs no handle.)

The contract (held by tests/runtime/test_runner.py on asyncio and on trio):

* **Start.** A request takes its first step at once, in the task that will finish it, so
  a request that never waits (most: a plain tool, a list, a cached read) costs no task, no
  cancel scope and no trip through the event loop.  Whatever that first step ties to its
  task (a cancel scope, a lock, ``asyncio.timeout``) belongs to the task that finishes it.
* **Context.** :meth:`Runner.start` runs a request in a copy of the starter's context (a
  context variable it sets never leaks into the next request); :func:`run` runs it in the
  caller's task and context (an HTTP request's own).
* **Cancel.** ``handle.cancel()`` ends the request at its next wait; a cancel that comes
  before the request entered its handle is delivered when it does.  It is delivered once;
  on asyncio it waits while the request is inside a shielded anyio cancel scope.
* **Settle.** The handle, entered around the request's code, swallows the cancellation it
  caused and only that one; afterwards ``cancel()`` does nothing and ``cancel_called``
  tells whether the request was cancelled, so its answer is dropped.

On asyncio the first step is run by hand (:func:`run_until_suspended`): a request that
waits keeps the task that started it, the work that task was doing (a stdio reader) goes
on in a new task, and cancellation is native (``Task.cancel``, taken back with
``Task.uncancel``).  Elsewhere (trio) each request started concurrently is a task-group
child in an anyio cancel scope of its own.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import anyio

if TYPE_CHECKING:
    import asyncio
    from types import TracebackType

    from anyio.abc import TaskGroup

T = TypeVar("T")

__all__ = [
    "Handle",
    "Runner",
    "Watch",
    "new_handle",
    "new_runner",
    "on_asyncio",
    "resume",
    "run",
    "run_until_suspended",
    "running_asyncio_loop",
]

#: How often a cancellation that waits for a shielded scope to end looks again.
SHIELD_POLL_S = 0.01

#: What a request's starter keeps of it (the contract above).
Handle: TypeAlias = "TaskHandle | anyio.CancelScope"


def on_asyncio() -> bool:
    """Whether an asyncio loop runs in this thread (``sniffio``'s answer for code under
    anyio, without its lookups)."""
    return running_asyncio_loop() is not None


def running_asyncio_loop() -> Any:
    """The asyncio event loop running in this thread, or None.  Without asyncio imported
    none can run (importing the server API does not import asyncio);
    ``asyncio._get_running_loop`` is public in ``asyncio.events.__all__``."""
    aio = sys.modules.get("asyncio")
    return None if aio is None else aio._get_running_loop()


def _asyncio() -> Any:
    """The asyncio module, for code that runs only on an asyncio loop (so it is imported)."""
    return sys.modules["asyncio"]


def run_until_suspended(coro: Coroutine[Any, Any, T]) -> tuple[bool, Any]:
    """Run ``coro`` up to its first suspension: ``(True, result)`` when it finished,
    ``(False, yielded)`` when it waits (finish it with ``await resume(coro, yielded)`` in
    the same task).  Exceptions it raises propagate."""
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        return True, stop.value
    return False, yielded


@types.coroutine
def resume(
    coro: Coroutine[Any, Any, T], value: Any, context: contextvars.Context | None = None
) -> Generator[Any, Any, T]:
    """Awaited, finishes a coroutine :func:`run_until_suspended` started (``value``: what
    it yielded), passing every value and exception (cancellation included) through as
    ``await coro`` would, each step in ``context`` when given.  Await it in the task that
    ran the first step, and enter any cancel scope meant to cover the coroutine before that
    first step, never between it and this await (a scope the coroutine entered and waits
    in must stay the innermost one)."""
    send: Callable[[Any], Any] = coro.send
    throw: Callable[[BaseException], Any] = coro.throw
    if context is not None:
        run_in: Callable[..., Any] = context.run
        send, throw = functools.partial(run_in, send), functools.partial(run_in, throw)
    while True:
        try:
            try:
                sent = yield value
            except BaseException as exc:  # delivered into the coroutine, as `await` would
                value = throw(exc)
            else:
                value = send(sent)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


class TaskHandle:
    """The asyncio handle: cancels the task the request runs in, natively, while the
    request is inside it (``task``); leaving takes its own cancellation back
    (``uncancel``) and swallows it, as an anyio cancel scope swallows its own."""

    __slots__ = ("_delivered", "_loop", "cancel_called", "task")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.cancel_called = False
        self.task: asyncio.Task[Any] | None = None
        self._loop = loop
        self._delivered = False

    def __enter__(self) -> TaskHandle:
        self.task = _asyncio().current_task(self._loop)
        if self.cancel_called:  # cancelled before it began: at its first wait
            self._deliver()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> bool:
        task, self.task = self.task, None
        if not self._delivered or task is None:
            return False
        others = task.uncancel()  # the task goes on (a reader, an HTTP request's task)
        return (
            others == 0 and exc_type is not None and issubclass(exc_type, _asyncio().CancelledError)
        )

    def cancel(self) -> None:
        if self.cancel_called:
            return
        self.cancel_called = True
        task = self.task
        if task is not None and task is _asyncio().current_task(self._loop):
            self._loop.call_soon(self._deliver)  # cancels itself: at its next wait
        else:
            self._deliver()

    def _deliver(self) -> None:
        task = self.task
        if task is None or self._delivered:
            return
        from .compat import in_shielded_scope

        if in_shielded_scope(task):
            self._loop.call_later(SHIELD_POLL_S, self._deliver)
            return
        self._delivered = True
        task.cancel()


def new_handle() -> Handle:
    """A handle for a request about to run in this task (see :func:`run`)."""
    loop = running_asyncio_loop()
    return anyio.CancelScope() if loop is None else TaskHandle(loop)


#: What :func:`run` gives: the outcome (finished?, value), at once or to await.
Outcome = tuple[bool, T | None]
Watch = Callable[[Handle], contextlib.AbstractContextManager[object]]


def run(
    coro: Coroutine[Any, Any, T],
    handle: Handle | None = None,
    watch: Watch | None = None,
    *,
    suspends: bool = False,
) -> Outcome[T] | Coroutine[Any, Any, Outcome[T]]:
    """Run a request in this task: ``(True, value)`` when it finished, ``(False, value)``
    when ``handle`` (the caller's, or a new one) cancelled it (drop the value); at once
    when it finished in its first step, else a coroutine to await (``isinstance(outcome,
    tuple)`` tells which).  ``watch`` is entered with the handle around the rest of a
    request that waits (an HTTP request's watch for its client going away), from the start
    when ``suspends`` says it always waits.  Off asyncio the handle (an anyio cancel scope)
    is entered before the first step, as :func:`resume` asks."""
    loop = running_asyncio_loop()
    if suspends or loop is None:
        return _finish(coro, handle or new_handle(), watch)
    done, step = run_until_suspended(coro)
    if done:
        return True, step
    # A TaskHandle belongs to no scope stack: entering it after the first step is safe.
    return _finish(resume(coro, step), handle or TaskHandle(loop), watch)


async def _finish(rest: Awaitable[T], handle: Handle, watch: Watch | None) -> Outcome[T]:
    value: T | None = None
    with handle:
        if watch is None:
            value = await rest
        else:
            with watch(handle):
                value = await rest
    return not handle.cancel_called, value


def new_runner(tg: TaskGroup) -> Runner:
    """The runner for the running event loop; failures escaping a request fail ``tg``."""
    return Runner(tg, running_asyncio_loop())


class Runner:
    """Starts requests concurrently with the task that reads them (stdio, memory), with the
    strategy of ``loop`` (None: not asyncio)."""

    def __init__(self, tg: TaskGroup, loop: asyncio.AbstractEventLoop | None) -> None:
        self._tg = tg
        self._loop = loop
        #: Tasks that took over a caller's work (and may now serve a request), joined;
        #: the newest one is doing that work now.
        self._tasks: set[asyncio.Task[None]] = set()
        self._newest: asyncio.Task[None] | None = None
        #: A handle for a request about to start.
        self.new_handle: Callable[[], Handle] = (
            anyio.CancelScope if loop is None else functools.partial(TaskHandle, loop)
        )

    async def start(
        self, coro: Coroutine[Any, Any, None], hand_on: Callable[[], Coroutine[Any, Any, Any]]
    ) -> bool:
        """Start ``coro`` (which enters its handle itself).  True when the calling task now
        served it to its end and ``hand_on()`` took over the caller's work in a new task:
        the caller then stops.  False: the caller goes on."""
        if self._loop is None:
            self._tg.start_soon(lambda: coro)
            return False
        context = contextvars.copy_context()
        try:  # run_until_suspended's step, in the copied context (no call: most end here)
            step = context.run(coro.send, None)
        except StopIteration:
            return False
        except Exception as exc:
            self._fail(exc)
            return False
        task = self._newest = self._loop.create_task(self._guarded(hand_on()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            await resume(coro, step, context)
        except Exception as exc:
            self._fail(exc)
        return True

    async def _guarded(self, coro: Coroutine[Any, Any, Any]) -> None:
        try:
            await coro
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self._tg.start_soon(_reraise, exc)

    async def join(self, grace: float) -> None:
        """Stop the task doing the caller's work, wait up to ``grace`` seconds for the
        requests started, then cancel the rest (off asyncio the task group does it)."""
        tasks = self._tasks
        if not tasks:
            return
        if self._newest is not None:  # the caller's work (reading input nobody sends)
            self._newest.cancel()
        with anyio.CancelScope(shield=True):
            _, late = await _asyncio().wait(set(tasks), timeout=grace)
            for task in late:
                task.cancel()
            if late:
                await _asyncio().wait(late)


async def _reraise(exc: BaseException) -> None:
    raise exc
