"""Upstream deadlines for the fast lane, and the direct path's watch for clients going
away: one timer each, not one per call.

Every forwarded call has a deadline (``timeout`` of its upstream, 30 s by default) and
nearly none reaches it.  ``asyncio.timeout`` arms and cancels a loop timer for each call
and walks its own state machine on entry and exit: ~4 µs of the ~130 a forwarded call
costs the gateway (issue #20).  Here a call only writes itself into its lane's table;
one timer ticks while calls are in flight and cancels the calls past their deadline,
which then raise :class:`~mcpkit.transports.client_base.RequestTimeoutError` as before.
The price is precision: a call is cancelled up to one tick (a twentieth of the timeout,
at most a second) after its deadline, never before.

The direct path (:mod:`.direct`) watches for its client going away the same way
(:class:`Watches`): a call that is still waiting 50 ms after it started gets a watcher
task, as every mcpkit HTTP request does (``transports.http.modern``), but rather than a
loop timer armed and cancelled per call (~3 µs), one timer ticks every 25 ms while calls
are in flight and starts the watchers of those that have waited long enough: 50 to 75 ms
after they started, never sooner.  Such a call's :class:`Watch` is its lane deadline too
(:meth:`Deadlines.enter` takes it): the call's task is looked up once, not twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ..transports.http.asgi import Receive

__all__ = ["Deadline", "Deadlines", "Watch", "Watches"]

#: How long a call waits before its client is watched (``transports.http.modern``'s
#: ``WATCH_AFTER_S``), and how often the calls in flight are looked at.
WATCH_AFTER_S = 0.05
WATCH_TICK_S = WATCH_AFTER_S / 2


class Deadline:
    """One call's deadline: its task, when it ends, and whether the tick cancelled it."""

    __slots__ = ("cancelling", "expired", "task", "when")

    def __init__(self, task: asyncio.Task[object], when: float) -> None:
        self.task = task
        self.when = when
        self.cancelling = task.cancelling()  # (cancellations that are not ours)
        self.expired = False

    def extend(self, timeout: float) -> None:
        """``timeout`` from now (an upstream's progress keeps a slow call alive)."""
        self.when = asyncio.get_running_loop().time() + timeout

    def timed_out(self) -> bool:
        """After a ``CancelledError``: whether it was the deadline's own, which is then
        taken back (``Task.uncancel``), as ``asyncio.timeout`` does; the caller raises
        its timeout error instead."""
        return self.expired and self.task.uncancel() <= self.cancelling


class Deadlines:
    """The calls in flight on one lane, swept by one timer while there are any."""

    __slots__ = ("_calls", "_handle", "_loop", "tick", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.tick = max(min(1.0, timeout / 20), 0.005)
        self._calls: dict[Deadline, None] = {}  # (an ordered set)
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def enter(self, call: Deadline | None = None) -> Deadline:
        """The current task's deadline, from now; :meth:`leave` it when the call ends.
        ``call``: the current task's call as registered already (the direct path's
        :class:`Watch`), which becomes the deadline instead of a new one."""
        loop = asyncio.get_running_loop()
        if call is None:
            task = asyncio.current_task(loop)
            assert task is not None
            deadline = Deadline(task, loop.time() + self.timeout)
        else:
            deadline = call
            deadline.when = loop.time() + self.timeout
            deadline.cancelling = call.task.cancelling()
        if self._loop is not loop:  # (a lane used from another loop: tests, restarts)
            self._calls = {d: None for d in self._calls if d.task.get_loop() is loop}
            self._loop, self._handle = loop, None
        if self._handle is None:
            self._handle = loop.call_later(self.tick, self._sweep)
        self._calls[deadline] = None
        return deadline

    def leave(self, deadline: Deadline) -> None:
        """The call ended (answered, failed or cancelled): no longer swept."""
        self._calls.pop(deadline, None)

    def _sweep(self) -> None:
        loop = self._loop
        assert loop is not None
        now = loop.time()
        for deadline in self._calls:
            if deadline.when <= now and not deadline.expired:
                deadline.expired = True
                deadline.task.cancel()
        self._handle = loop.call_later(self.tick, self._sweep) if self._calls else None


class Watch(Deadline):
    """One call whose client may go away: its task, its ``receive``, since when it waits,
    and its watcher once it has one.  The watcher cancels the task (as
    :class:`~mcpkit.transports.http.asgi.TaskCanceller` does, and :meth:`settle` tells the
    same way whether the cancellation was the watch's).  A :class:`Deadline` too, not yet
    entered: the lane's, once the call reaches its lane (:meth:`Deadlines.enter`)."""

    __slots__ = ("called", "receive", "since", "watcher")

    def __init__(self, task: asyncio.Task[Any], receive: Receive, since: float) -> None:
        self.task = task
        self.when = float("inf")
        self.cancelling = 0
        self.expired = False
        self.receive = receive
        self.since = since
        self.called = False
        self.watcher: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        """The client went away: cancel the call's task (once)."""
        if not self.called:
            self.called = True
            self.task.cancel()

    def settle(self) -> bool:
        """After the call ended (a ``CancelledError`` caught, or a return): whether its
        client went away, the one cancellation to take back (``Task.uncancel``)."""
        return self.called and self.task.uncancel() == 0


class Watches:
    """The direct path's calls in flight, looked at by one timer while there are any."""

    __slots__ = ("_calls", "_handle", "_loop")

    def __init__(self) -> None:
        self._calls: dict[Watch, None] = {}  # (an ordered set: oldest first)
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def enter(self, receive: Receive) -> Watch:
        """The current task's watch, from now; :meth:`leave` it when the call ends."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        assert task is not None
        watch = Watch(task, receive, loop.time())
        if self._loop is not loop:  # (another loop: tests, restarts)
            self._calls = {w: None for w in self._calls if w.task.get_loop() is loop}
            self._loop, self._handle = loop, None
        if self._handle is None:
            self._handle = loop.call_later(WATCH_TICK_S, self._sweep)
        self._calls[watch] = None
        return watch

    def leave(self, watch: Watch) -> None:
        """The call ended: no longer looked at, and its watcher (if any) stopped."""
        self._calls.pop(watch, None)
        if watch.watcher is not None:
            watch.watcher.cancel()

    def _sweep(self) -> None:
        loop = self._loop
        assert loop is not None
        due = loop.time() - WATCH_AFTER_S
        for watch in self._calls:
            if watch.since > due:
                break  # (entered in order: the rest are younger)
            if watch.watcher is None:
                watch.watcher = loop.create_task(_watch(watch))
        self._handle = loop.call_later(WATCH_TICK_S, self._sweep) if self._calls else None


async def _watch(watch: Watch) -> None:
    """Cancel the call if its client disconnects; the call's end cancels this task."""
    with contextlib.suppress(Exception):
        while True:
            message = await watch.receive()
            if message["type"] == "http.disconnect":
                watch.cancel()
                return
