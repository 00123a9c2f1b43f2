"""The running side of one task: its lease, its cancellation, input inside it.

A :class:`TaskHandle` belongs to the process running the task's tool (the replica that
created it, or the ``mcpkit worker`` that took it from the queue).  While the tool runs,
:meth:`TaskHandle.watch` renews the record's lease and stops the tool when the record
asks for cancellation, is gone, or went on with another worker; :meth:`TaskHandle.ask`
parks the task in ``input_required`` until ``tasks/update`` answers.  A backend outage
does not stop the tool: the handle keeps working and tries again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ..types.errors import McpError, StateUnavailable
from .task_records import TERMINAL, renew_lease

if TYPE_CHECKING:
    from .tasks import TaskManager

log = logging.getLogger("mcpkit.tasks")

#: How often a task waiting for input reads its record (an update here wakes it sooner).
POLL_S = 0.1


class TaskRecordGone(Exception):
    """The task's record vanished (cancelled and removed, or expired) while the tool waited
    for input: the run ends as a crash of that run, not as a client-visible
    ``TaskCancelled`` (that name is the client's, for a task that ended ``cancelled``)."""


class TaskHandedOff(BaseException):
    """Raised from ``ctx.start_task()`` on a replica that queues task work: the task now
    belongs to a worker, which replays the call; the replica's run of the tool must end
    here.  A BaseException so that a tool's ``except Exception`` cannot swallow it and
    carry on (the work would then run twice)."""


class TaskHandle:
    """The running side of one task: heartbeats, cancellation, input inside the task."""

    def __init__(self, manager: TaskManager, task_id: str, principal: object) -> None:
        self.manager = manager
        self.task_id = task_id
        self.principal = principal
        self.started = False
        self.scope: anyio.CancelScope | None = None
        self.begin: Callable[[], Awaitable[None]] | None = None
        #: The worker running a queued task (its record's ``runner``); None in-process.
        self.runner: str | None = None
        #: The task is no longer ours to settle: handed back, or taken by another worker.
        self.lost = False

    async def supervise(
        self, run: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any] | None:
        """Run the tool while :meth:`watch` renews the lease and honours cancellation;
        the tool's result, or None when it was cancelled.  The tool's exception is
        raised here, outside the task group (no exception group around it)."""
        failure: BaseException | None = None
        result: dict[str, Any] = {}
        with anyio.CancelScope() as scope:
            self.scope = scope
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.watch)
                try:
                    result = await run()
                except (Exception, TaskHandedOff) as exc:  # re-raised below, outside the group
                    failure = exc
                finally:
                    tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if scope.cancelled_caught:
            return None
        return result

    def drop(self) -> None:
        """Stop the tool and settle nothing (its worker hands the task back)."""
        self.lost = True
        if self.scope is not None:
            self.scope.cancel()

    async def watch(self) -> None:
        """Renew the lease and honour cancellation while the tool runs."""
        last_beat = 0.0
        while True:
            if self.started:
                try:
                    record = await self.manager.backend.get_json(self.manager._key(self.task_id))
                    if record is None or record.get("cancelRequested"):
                        if self.scope is not None:
                            self.scope.cancel()
                        return
                    if self.runner is not None and (
                        record.get("runner") != self.runner or record["status"] in TERMINAL
                    ):
                        self.drop()  # our lease lapsed and the task went on without us
                        return
                    now = time.time()
                    lease_s = self.manager.lease_s
                    if now - last_beat > lease_s / 3:
                        last_beat = now
                        renew = partial(renew_lease, lease_s=lease_s, runner=self.runner)
                        await self.manager._update(self.task_id, renew)
                except StateUnavailable:  # an outage its watch logged: keep working
                    await anyio.sleep(1.0)
                except McpError:
                    raise
                except Exception as exc:  # backend outage: keep working, try again
                    log.warning("task %s: state backend unavailable (%s)", self.task_id, exc)
                    await anyio.sleep(1.0)
            await self._wait(0.25)

    async def _wait(self, seconds: float) -> None:
        wake = self.manager._wakeups.setdefault(self.task_id, anyio.Event())
        with anyio.move_on_after(seconds):
            await wake.wait()
        if wake.is_set():
            self.manager._wakeups[self.task_id] = anyio.Event()

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Park the task in ``input_required`` until ``tasks/update`` answers every key."""
        keys = set(requests)

        def park(rec: dict[str, Any]) -> None:
            pending = {k: v for k, v in requests.items() if k not in rec["responses"]}
            if pending:
                rec["status"] = "input_required"
                rec["inputRequests"] = {**(rec.get("inputRequests") or {}), **pending}

        await self.manager._update(self.task_id, park)
        while True:
            try:
                record = await self.manager.backend.get_json(self.manager._key(self.task_id))
            except Exception as exc:  # backend outage: wait for it
                if not isinstance(exc, StateUnavailable):  # (that one its watch logged)
                    log.warning("task %s: state backend unavailable (%s)", self.task_id, exc)
                await anyio.sleep(1.0)
                continue
            if record is None:
                raise TaskRecordGone()
            answers = record.get("responses") or {}
            if keys <= set(answers):
                return {k: answers[k] for k in keys}
            await self._wait(POLL_S)

    async def start(self) -> None:
        if not self.started and self.begin is not None:
            await self.begin()
