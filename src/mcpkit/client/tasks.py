"""The tasks extension (``io.modelcontextprotocol/tasks``), client side.

With ``Client(..., tasks=True)`` the client declares the extension on every modern
request; a server may then answer ``tools/call`` with ``resultType: "task"``.  A
:class:`Task` follows it: it polls ``tasks/get`` no faster than the server's
``pollIntervalMs``, answers ``input_required`` with the application's callbacks through
``tasks/update``, and resolves to the tool's result (``completed``), raises the JSON-RPC
error (``failed``) or :class:`TaskCancelled`.  ``await task`` waits; ``task.cancel()``
asks the server to stop.

On a 2025-11-25 server (core tasks, SEP-1686) the same :class:`Task` follows a call made
with the ``task`` parameter: it polls ``tasks/get`` (``pollInterval``) while the task works
and fetches the outcome with ``tasks/result``, which the server holds open while the task
ends; input the task needs arrives meanwhile as ordinary server requests, answered by the
application's callbacks.  Such a server may also send ``notifications/tasks/status``
as the task changes: the client hands each to the task's handle (:meth:`Task.observe`),
which then goes on without waiting for its next poll.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any

import anyio

from ..types.errors import INTERNAL_ERROR, McpError
from ..types.versions import Era
from .callbacks import Callbacks, call_maybe_async
from .errors import ClientError, InvalidResultError
from .mrtr import answer_all

if TYPE_CHECKING:
    from .options import FeatureOptions

TERMINAL = frozenset({"completed", "failed", "cancelled"})
MIN_POLL_S = 0.05
DEFAULT_POLL_S = 0.5


#: Receives a task record (``taskId``, ``status``, ``statusMessage``, ...) as it changes.
TaskStatusCallback = Callable[[dict[str, Any]], Awaitable[None] | None]


def legacy_task_wanted(era: Era | None, support: str | None, features: FeatureOptions) -> bool:
    """Whether ``call_tool`` asks a 2025-11-25 server for a task: the tool's listing
    requires one, or allows one and the client was made with ``tasks=True``."""
    if era != "legacy":
        return False
    return support == "required" or (support == "optional" and features.tasks)


class TaskCancelled(ClientError):
    """The task ended in ``cancelled``."""


Request = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class Task:
    """A durable tool call running on the server."""

    def __init__(
        self,
        created: dict[str, Any],
        request: Request,
        callbacks: Callbacks,
        era: Era = "modern",
    ) -> None:
        if era == "legacy":  # a 2025-11-25 CreateTaskResult wraps its Task
            wrapped = created.get("task")
            created = wrapped if isinstance(wrapped, dict) else {}
        task_id = created.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidResultError("a task result without a taskId")
        self.id = task_id
        self.last: dict[str, Any] = created
        self._request = request
        self._callbacks = callbacks
        self._answered: set[str] = set()
        self.era: Era = era
        #: Set when a status notification updated :attr:`last` (see :meth:`observe`).
        self._notified = anyio.Event()

    @property
    def status(self) -> str:
        return str(self.last.get("status", "working"))

    def _interval(self) -> float:
        value = self.last.get("pollIntervalMs", self.last.get("pollInterval"))
        seconds = value / 1000 if isinstance(value, (int, float)) and value > 0 else DEFAULT_POLL_S
        return max(MIN_POLL_S, seconds)

    def observe(self, task: dict[str, Any]) -> None:
        """Take a ``notifications/tasks/status`` of this task (the ``Task`` it carries)
        as its latest state; a :meth:`result` waiting for its next poll goes on now."""
        if task.get("taskId") != self.id:
            return
        self.last = {**self.last, **{k: v for k, v in task.items() if k != "_meta"}}
        self._notified.set()

    async def _pause(self) -> bool:
        """Wait for the next poll, or less when a status notification arrives first;
        whether one did (then :attr:`last` is already fresh)."""
        with anyio.move_on_after(self._interval()):
            await self._notified.wait()
        notified = self._notified.is_set()
        if notified:
            self._notified = anyio.Event()
        return notified

    async def refresh(self) -> dict[str, Any]:
        """One ``tasks/get``."""
        self.last = await self._request("tasks/get", {"taskId": self.id})
        return self.last

    async def cancel(self) -> None:
        """Ask the server to stop (cooperative: the task may still complete).  A
        2025-11-25 server answers with the task, already ``cancelled``."""
        answer = await self._request("tasks/cancel", {"taskId": self.id})
        if self.era == "legacy" and answer.get("taskId") == self.id:
            self.last = answer

    async def result(
        self, timeout: float | None = None, *, on_status: TaskStatusCallback | None = None
    ) -> dict[str, Any]:
        """Wait for a terminal status; the tool's result, or raise.  ``on_status`` gets
        the task record whenever its ``status`` or ``statusMessage`` changes (a host
        shows it while the task runs)."""
        seen: tuple[Any, Any] | None = None
        with anyio.fail_after(timeout):
            while True:
                now = (self.last.get("status"), self.last.get("statusMessage"))
                if on_status is not None and now != seen:
                    seen = now
                    await call_maybe_async(on_status, dict(self.last))
                if self.status in TERMINAL:
                    break
                if self.era == "legacy" and self.status == "input_required":
                    break  # tasks/result carries the task's requests to our callbacks
                if self.status == "input_required":
                    await self._answer()
                if not await self._pause():
                    await self.refresh()
        if self.era == "legacy":
            return await self._legacy_outcome()
        if self.status == "completed":
            result = self.last.get("result")
            if not isinstance(result, dict):
                raise InvalidResultError(f"task {self.id} completed without a result")
            return result
        if self.status == "cancelled":
            raise TaskCancelled(f"task {self.id} was cancelled")
        error = self.last.get("error") or {}
        raise McpError(
            error.get("code", INTERNAL_ERROR) if isinstance(error, dict) else INTERNAL_ERROR,
            str(error.get("message", "task failed")) if isinstance(error, dict) else "task failed",
            error.get("data") if isinstance(error, dict) else None,
        )

    async def _legacy_outcome(self) -> dict[str, Any]:
        """2025-11-25: the tool's result from ``tasks/result`` (which raises the task's
        error); a cancelled task has none."""
        if self.status == "cancelled":
            raise TaskCancelled(f"task {self.id} was cancelled")
        result = await self._request("tasks/result", {"taskId": self.id})
        if not isinstance(result.get("content"), list):
            raise InvalidResultError(f"task {self.id}: tasks/result is not a tool result")
        return result

    async def _answer(self) -> None:
        requests = self.last.get("inputRequests")
        if not isinstance(requests, dict):
            return
        fresh = {k: v for k, v in requests.items() if k not in self._answered}
        if not fresh:
            return
        responses = await answer_all("tasks/get", {"inputRequests": fresh}, self._callbacks)
        self._answered.update(responses)
        await self._request("tasks/update", {"taskId": self.id, "inputResponses": responses})

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        return self.result().__await__()
