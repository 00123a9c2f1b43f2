"""Run a plain function in a worker thread and hand its result back to the event loop.

:func:`run_sync` is what a plain ``def`` tool's call awaits.  On asyncio each event loop
has one :class:`WorkerPool`: worker threads fed by one queue, whose results come back in
batches (one ``call_soon_threadsafe`` wake-up of the loop for all the results ready at
that moment).  A call costs the loop a future, a queue put and setting that future: no
task, no cancel scope, no limiter.  The function runs in a copy of the caller's context.
Workers run behind the loop's thread on Linux (:func:`_run_behind_the_loop`).

Contracts, those of ``anyio.to_thread.run_sync(fn, abandon_on_cancel=True)``:

* at most ``limit`` calls run at once per event loop (default 40, anyio's); more wait in
  the queue, in order.  ``current_pool().limit = n`` changes it.  A call waits behind busy
  workers at most about :data:`STALL_SECONDS` before another thread starts;
* a call whose caller is cancelled stops waiting at once; a call not yet started never
  starts, one already running runs to its end in its thread and its result is dropped;
* an exception raised by the function is raised to the caller;
* ``anyio.from_thread.run`` / ``run_sync`` work in the function, as in anyio's workers.

On any other backend (trio) :func:`run_sync` is ``anyio.to_thread.run_sync`` with
``abandon_on_cancel=True``.  Idle workers leave after :data:`IDLE_SECONDS`; they are daemon
threads, so a function still running at exit does not hold the process.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .compat import claim_thread_for_anyio
from .runner import running_asyncio_loop

if TYPE_CHECKING:  # importing the server API does not import asyncio
    import asyncio

__all__ = [
    "DEFAULT_LIMIT",
    "IDLE_SECONDS",
    "STALL_SECONDS",
    "WorkerPool",
    "current_pool",
    "run_sync",
]

T = TypeVar("T")

#: Calls that may run at once per event loop unless ``WorkerPool.limit`` says otherwise.
DEFAULT_LIMIT = 40
#: Seconds a worker waits for a call before its thread ends.
IDLE_SECONDS = 10.0
#: Seconds calls may wait in the queue, no worker taking any, before more threads start.
STALL_SECONDS = 0.002

_Job = tuple[contextvars.Context, Callable[[], Any], "asyncio.Future[Any]"]
_Done = tuple["asyncio.Future[Any]", Any, BaseException | None]


class WorkerPool:
    """The worker threads of one asyncio event loop (see the module's contracts).

    Threads start lazily: the first call starts one, and another starts only when calls
    wait in the queue while no worker took one for :data:`STALL_SECONDS` (every worker
    blocked or busy), up to ``limit``.  Quick calls so share one or two threads, which
    take the next call without sleeping and contend for the GIL with nothing but the
    loop; calls that block get threads of their own, a stall period apart at most.

    A worker's round is a queue get, the call and a deque append; the lock is taken only
    to start or retire a thread.  What the loop decides with it is counted on the loop:
    calls submitted, and calls whose results it has not taken back (``_busy``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int = DEFAULT_LIMIT) -> None:
        self._loop = loop
        self._limit = _checked_limit(limit)
        import anyio.lowlevel  # here: importing the server API does not load anyio's core

        self._token: object = anyio.lowlevel.current_token()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        #: Guarded by ``_lock``: live worker threads (idle ones included).
        self._lock = threading.Lock()
        self.threads = 0
        #: On the loop: calls submitted, and those whose results are not handed back yet.
        self._submitted = 0
        self._busy = 0
        #: The loop's check for stalled calls, while one is due, and calls taken then.
        self._watch: asyncio.TimerHandle | None = None
        self._taken_at_watch = 0
        #: Finished calls not yet handed to the loop; ``_wake`` is held while a wake-up of
        #: the loop to hand them over is on its way (one for all the results ready then).
        self._done: collections.deque[_Done] = collections.deque()
        self._wake = threading.Lock()
        #: How many times workers woke the loop to hand results over.
        self.wakeups = 0

    @property
    def limit(self) -> int:
        """How many calls may run at once; raising it takes effect for the next call."""
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        self._limit = _checked_limit(value)

    @property
    def ready(self) -> int:
        """Calls finished in their thread whose results the loop has not taken yet."""
        return len(self._done)

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """Queue ``fn`` (in a copy of the current context); the future gets its result.
        Cancelling the future abandons the call.  Called on the loop's thread."""
        future: asyncio.Future[T] = self._loop.create_future()
        self._jobs.put((contextvars.copy_context(), fn, future))
        self._submitted += 1
        self._busy += 1
        if self._busy > self.threads:  # no worker is free for it (or it just became free)
            if not self.threads:
                self._start_workers(1)
            elif self._watch is None:
                self._watch_for_stalls()
        return future

    def _taken(self) -> int:
        return self._submitted - self._jobs.qsize()

    def _watch_for_stalls(self) -> None:
        self._taken_at_watch = self._taken()
        self._watch = self._loop.call_later(STALL_SECONDS, self._unstall)

    def _unstall(self) -> None:
        """On the loop: start workers for calls that waited a whole stall period while
        no worker took any; look again while calls wait and more threads may start (at
        the limit, the next call submitted looks again)."""
        self._watch = None
        waiting = self._jobs.qsize()
        if not waiting:
            return
        if self._taken() == self._taken_at_watch:
            self._start_workers(min(waiting, self._limit - self.threads))
        if self.threads < self._limit:
            self._watch_for_stalls()

    def _start_workers(self, count: int) -> None:
        for _ in range(count):
            with self._lock:
                self.threads += 1
            try:
                threading.Thread(target=self._work, name="mcpkit-worker", daemon=True).start()
            except BaseException:
                self._retire()
                raise

    def _retire(self) -> None:
        with self._lock:
            self.threads -= 1

    def _work(self) -> None:
        claim_thread_for_anyio(self._token)
        _run_behind_the_loop()
        get = self._jobs.get
        done = self._done
        while True:
            try:
                context, fn, future = get(timeout=IDLE_SECONDS)
            except queue.Empty:
                self._retire()
                if not self._jobs.qsize():
                    return
                with self._lock:  # a call came in meanwhile: stay for it
                    self.threads += 1
                continue
            value: Any = None
            error: BaseException | None = None
            if not future.cancelled():  # abandoned before it started: never start it
                try:
                    value = context.run(fn)
                except BaseException as exc:
                    error = exc
            done.append((future, value, error))
            del context, fn, future, value, error
            if not self._wake.acquire(blocking=False):
                continue  # a wake-up is on its way: it takes this result too
            self.wakeups += 1
            try:
                self._loop.call_soon_threadsafe(self._hand_over)
            except RuntimeError:  # the loop is closed: nobody waits for these results
                self._retire()
                return

    def _hand_over(self) -> None:
        """On the loop: settle every finished call's future (those still waited for)."""
        self._wake.release()
        done = self._done
        while done:
            future, value, error = done.popleft()
            self._busy -= 1
            if future.done():  # cancelled: its caller stopped waiting
                continue
            if error is None:
                future.set_result(value)
            elif isinstance(error, StopIteration):  # a future cannot carry it (PEP 479)
                failure = RuntimeError(f"function raised {error!r}")
                future.set_exception(failure.with_traceback(error.__traceback__))
            else:
                future.set_exception(error)


def _run_behind_the_loop() -> None:
    """Make this thread ``SCHED_BATCH`` (Linux): woken by a call the loop queued, it does not
    preempt the loop's thread on their core but runs when the loop waits, so the calls of
    one loop iteration go out together.  Its CPU share stays a normal thread's; threads and
    processes a tool starts inherit the policy."""
    batch = getattr(os, "SCHED_BATCH", None)
    if batch is None:
        return
    with contextlib.suppress(OSError):  # not allowed (a sandbox): an ordinary thread then
        os.sched_setscheduler(0, batch, os.sched_param(0))


def _checked_limit(value: int) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"the worker thread limit must be a positive integer, not {value!r}")
    return value


#: The pool of each loop that asked for one.  A pool holds its loop, so a closed loop's pool
#: is forgotten when another loop asks for its first pool (:func:`_pool_of`): a process that
#: runs one loop after another holds at most one closed loop.
_pools: dict[asyncio.AbstractEventLoop, WorkerPool] = {}
#: The pool last asked for, in a list of one: the usual process has one loop.
_last: list[WorkerPool] = []


def current_pool() -> WorkerPool:
    """The running asyncio event loop's pool, created on first use.  Raises
    ``RuntimeError`` when no asyncio loop runs in this thread (e.g. on trio)."""
    loop = running_asyncio_loop()
    if loop is None:
        raise RuntimeError("no running asyncio event loop")
    return _pool_of(loop)


def _pool_of(loop: asyncio.AbstractEventLoop) -> WorkerPool:
    if _last and _last[0]._loop is loop:
        return _last[0]
    pool = _pools.get(loop)
    if pool is None:
        for old in list(_pools):  # (a copy: loops in other threads may add theirs meanwhile)
            if old.is_closed():
                _pools.pop(old, None)
        pool = _pools[loop] = WorkerPool(loop)
    _last[:] = [pool]
    return pool


async def run_sync(fn: Callable[[], T]) -> T:
    """Call ``fn()`` in a worker thread and return its result (see the module's contracts)."""
    loop = running_asyncio_loop()
    if loop is None:  # not on asyncio: anyio's workers
        import anyio.to_thread  # here: an asyncio process never needs it

        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    return await _pool_of(loop).submit(fn)
