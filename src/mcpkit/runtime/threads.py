"""Run a plain function in a worker thread and hand its result back to the event loop.

:func:`run_sync` is what a plain ``def`` tool's call awaits.  On asyncio each event loop
has one :class:`WorkerPool`: worker threads fed by one queue, whose results come back in
batches (one ``call_soon_threadsafe`` wake-up of the loop for all the results ready at
that moment).  A call costs the loop a future, a queue put and setting that future: no
task, no cancel scope, no limiter.  The function runs in a copy of the caller's context.

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

import contextvars
import queue
import threading
import weakref
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
    loop; calls that block get threads of their own, a stall period apart at most."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int = DEFAULT_LIMIT) -> None:
        self._loop = loop
        self._limit = _checked_limit(limit)
        import anyio.lowlevel  # here: importing the server API does not load anyio's core

        self._token: object = anyio.lowlevel.current_token()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        #: Guarded by ``_lock``: live worker threads (idle ones included), workers waiting
        #: for a call, calls taken.
        self.threads = 0
        self._idle = 0
        self._taken = 0
        #: The loop's check for stalled calls, while one is due, and ``_taken`` then.
        self._watch: asyncio.TimerHandle | None = None
        self._taken_at_watch = 0
        #: Guarded by ``_lock``: finished calls not yet handed to the loop, and whether
        #: a wake-up of the loop to hand them over is already on its way.
        self._done: list[_Done] = []
        self._wake_sent = False
        #: How many times workers woke the loop to hand results over (a wake-up carries
        #: every result finished before the loop ran it).
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
        with self._lock:
            if self._jobs.qsize() <= self._idle:
                return future  # a waiting worker takes it
            start = self.threads == 0
            if start:
                self.threads = 1
        if start:
            self._start_workers(1)
        elif self._watch is None:
            self._watch_for_stalls()
        return future

    def _watch_for_stalls(self) -> None:
        self._taken_at_watch = self._taken
        self._watch = self._loop.call_later(STALL_SECONDS, self._unstall)

    def _unstall(self) -> None:
        """On the loop: start workers for calls that waited a whole stall period while
        no worker took any; look again while calls wait and more threads may start (at
        the limit, the next call submitted looks again)."""
        self._watch = None
        with self._lock:
            waiting = self._jobs.qsize() - self._idle
            if waiting <= 0:
                return
            more = 0
            if self._taken == self._taken_at_watch:
                more = max(0, min(waiting, self._limit - self.threads))
                self.threads += more
            room = self.threads < self._limit
        self._start_workers(more)
        if room:
            self._watch_for_stalls()

    def _start_workers(self, count: int) -> None:
        for started in range(count):
            try:
                threading.Thread(target=self._work, name="mcpkit-worker", daemon=True).start()
            except BaseException:
                with self._lock:
                    self.threads -= count - started
                raise

    def _work(self) -> None:
        claim_thread_for_anyio(self._token)
        jobs = self._jobs
        lock = self._lock
        with lock:
            self._idle += 1
        while True:
            try:
                context, fn, future = jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with lock:
                    if not jobs.qsize():
                        self._idle -= 1
                        self.threads -= 1
                        return
                continue
            with lock:
                self._idle -= 1
                self._taken += 1
            value: Any = None
            error: BaseException | None = None
            if not future.cancelled():  # abandoned before it started: never start it
                try:
                    value = context.run(fn)
                except BaseException as exc:
                    error = exc
            with lock:
                self._idle += 1
                self._done.append((future, value, error))
                wake = not self._wake_sent
                if wake:
                    self._wake_sent = True
                    self.wakeups += 1
            del context, fn, future, value, error
            if not wake:
                continue
            try:
                self._loop.call_soon_threadsafe(self._hand_over)
            except RuntimeError:  # the loop is closed: nobody waits for these results
                with lock:
                    self._idle -= 1
                    self.threads -= 1
                return

    def _hand_over(self) -> None:
        """On the loop: settle every finished call's future (those still waited for)."""
        with self._lock:
            done, self._done = self._done, []
            self._wake_sent = False
        for future, value, error in done:
            if future.done():  # cancelled: its caller stopped waiting
                continue
            if error is None:
                future.set_result(value)
            elif isinstance(error, StopIteration):  # a future cannot carry it (PEP 479)
                failure = RuntimeError(f"function raised {error!r}")
                future.set_exception(failure.with_traceback(error.__traceback__))
            else:
                future.set_exception(error)


def _checked_limit(value: int) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"the worker thread limit must be a positive integer, not {value!r}")
    return value


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WorkerPool] = (
    weakref.WeakKeyDictionary()
)
#: The pool last asked for, in a list of one: the usual process has one loop.
_last: list[WorkerPool] = []


def current_pool() -> WorkerPool:
    """The running asyncio event loop's pool, created on first use.  Raises
    ``RuntimeError`` when no asyncio loop runs in this thread (e.g. on trio)."""
    loop = running_asyncio_loop()
    if loop is None:
        raise RuntimeError("no running asyncio event loop")
    if _last and _last[0]._loop is loop:
        return _last[0]
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = WorkerPool(loop)
    _last[:] = [pool]
    return pool


async def run_sync(fn: Callable[[], T]) -> T:
    """Call ``fn()`` in a worker thread and return its result (see the module's contracts)."""
    try:
        pool = current_pool()
    except RuntimeError:  # not on asyncio: anyio's workers
        import anyio.to_thread  # here: an asyncio process never needs it

        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    return await pool.submit(fn)
