"""Upstream deadlines for the fast lane: one timer for a lane's calls, not one per call.

Every forwarded call has a deadline (``timeout`` of its upstream, 30 s by default) and
nearly none reaches it.  ``asyncio.timeout`` arms and cancels a loop timer for each call
and walks its own state machine on entry and exit; here a call only writes itself into
its lane's table, and one timer ticks while calls are in flight and cancels the calls
past their deadline,
which then raise :class:`~mcpkit.transports.client_base.RequestTimeoutError` as before.
The price is precision: a call is cancelled up to one tick (a twentieth of the timeout,
at most a second) after its deadline, never before.
"""

from __future__ import annotations

import asyncio

__all__ = ["Deadline", "Deadlines"]


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
        ``call``: a deadline made for the current task's call already (the gateway's
        lane shortcut's), entered instead of a new one."""
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
