"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) on the server.

A tool registered with ``task="optional"`` or ``task="required"`` runs as a durable task
when the request's client capabilities declare the extension.  Everything about a task
lives in the state backend under ``task:<id>``: status, outstanding input requests,
answers, the final result or error, a cancel flag and the lease of the worker running it.
So ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` work on any replica; the worker
(on the replica that created the task) polls its record for answers and cancellation.
If that replica dies, its lease stops being renewed and the next ``tasks/get`` anywhere
marks the task ``failed`` with an error saying so: a task never silently vanishes.

With ``server.task_workers = "external"`` (``mcpkit serve --task-workers external``, Redis
only) the replica does not run the tool: it stores the record with the request in it,
queues the task id, and ``mcpkit worker`` processes run it (:mod:`.workers`).  Such a
record carries ``queued``; its lease starts when a worker takes it (``runner``), and a
lapsed lease fails it only when its tool may not run twice (``rerun`` false): otherwise
another worker runs it again.

Input inside a task (``await ctx.elicit(...)`` after the task started) parks the task in
``input_required`` with ``inputRequests``; ``tasks/update`` delivers the answers.  With
``task_start="manual"`` a tool may first gather input through ordinary MRTR rounds and
then call ``await ctx.start_task()`` (inputs before that point are synchronous, as the
extension requires for work that must be confirmed before it is accepted).

The same engine serves the 2025-11-25 core tasks (SEP-1686) to handshake-era clients: a
``tools/call`` with a ``task`` parameter runs as a task (the tool's ``execution.taskSupport``
says whether it may), and ``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel``
read the same records, bound to the caller the same way.  What differs between the eras is
only the wire form, and it lives in :mod:`.task_eras`; input inside a task reaches a
2025-11-25 client as requests on its ``tasks/result`` stream instead of ``inputRequests``.

This module is the manager (creating, running, answering for tasks); a record's fields and
wire forms are in :mod:`.task_records`, the running side of one task (lease, cancellation,
input inside it) in :mod:`.task_handle`.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.negotiation import RequestMeta
from ..runtime.changes import ChangeEvent
from ..runtime.exchange import NULL_EXCHANGE
from ..runtime.listen import TASK_STATUS
from ..state.base import StateBackend
from ..types.errors import (
    INTERNAL_ERROR,
    McpError,
    StateUnavailable,
    invalid_params,
    missing_capability,
)
from ..types.versions import TASKS_EXTENSION
from .mrtr import NeedInput
from .task_eras import created_result, legacy_task
from .task_handle import TaskHandedOff, TaskHandle
from .task_records import (
    TERMINAL,
    detailed,
    now_iso,
    owner_of,
    public,
    request_cancel,
    requested_ttl,
    status_address,
    status_of,
)

if TYPE_CHECKING:
    from .context import Context
    from .server import Server

log = logging.getLogger("mcpkit.tasks")

LEASE_S = 10.0
TASK_EVENT = "task"
#: The newest tasks of one owner that ``tasks/list`` (2025-11-25) can name.
MAX_LISTED = 1000


def declares_tasks(meta: RequestMeta) -> bool:
    extensions = meta.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def tasks_required_error() -> McpError:
    return missing_capability({"extensions": {TASKS_EXTENSION: {}}}, "the tasks extension")


class TaskManager:
    """Creates, runs and answers for tasks; one per server."""

    def __init__(
        self,
        server: Server,
        backend: StateBackend,
        *,
        ttl_ms: int = 3_600_000,
        poll_interval_ms: int = 250,
    ) -> None:
        self.server = server
        self.backend = backend
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: How long a task survives its worker's silence before it is declared failed.
        self.lease_s = float(os.environ.get("MCPKIT_TASK_LEASE_S", LEASE_S))
        self._wakeups: dict[str, anyio.Event] = {}
        #: Tasks whose input requests a 2025-11-25 ``tasks/result`` is asking the client for.
        self.serving_input: set[str] = set()
        #: The Redis stream tasks go to when workers run them (None: run in-process).
        self.queue: Any = None
        #: Unfinished queued tasks one principal may have (0: no limit).
        self.max_queued = int(getattr(server, "max_queued_tasks", 0) or 0)
        if getattr(server, "task_workers", "in-process") == "external":
            from ..state.queue import TaskQueue

            self.queue = TaskQueue.of(backend, horizon_s=self._ttl_s())

    # ------------------------------------------------------------------ records
    def _key(self, task_id: str) -> str:
        return f"task:{task_id}"

    def _ttl_s(self) -> float:
        return self.ttl_ms / 1000 + 60

    async def _load(self, task_id: object, ctx_principal: object) -> dict[str, Any]:
        if not isinstance(task_id, str) or not task_id:
            raise invalid_params("taskId must be a non-empty string")
        record = await self.backend.get_json(self._key(task_id))
        if record is None or record.get("owner") != owner_of(ctx_principal):
            raise invalid_params(f"Unknown task: {task_id}", {"taskId": task_id})
        return record  # type: ignore[no-any-return]

    async def _update(
        self, task_id: str, change: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        before: list[tuple[object, object]] = []

        def apply(old: Any) -> Any:
            if old is None:
                raise invalid_params(f"Unknown task: {task_id}")
            before[:] = [status_of(old)]  # (the last attempt is the one stored)
            change(old)
            old["lastUpdatedAt"] = now_iso()
            return old

        record: dict[str, Any] = await self.backend.update_json(
            self._key(task_id), apply, self._ttl_s()
        )
        self._announce(record)
        if "session" in record and before and before[0] != status_of(record):
            self._announce_status(record)
        if self.queue is not None and "queued" in record and record["status"] in TERMINAL:
            await self.queue.release(record["owner"], task_id)
        return record

    def _announce(self, record: dict[str, Any]) -> None:
        wake = self._wakeups.get(record["taskId"])
        if wake is not None:
            wake.set()
        # Addressed to the task's owner: a listen stream delivers it to that caller only.
        event = ChangeEvent(TASK_EVENT, record["taskId"], detailed(record), record.get("owner"))
        self.server.bus.publish(event)

    def _announce_status(self, record: dict[str, Any]) -> None:
        """``notifications/tasks/status`` of a 2025-11-25 task, to the session that
        created it (on any replica: the bus relays it)."""
        task = legacy_task(record)
        self.server.bus.publish(ChangeEvent(TASK_STATUS, task["taskId"], task, record["session"]))

    def new_record(
        self, task_id: str, principal: object, ttl_ms: int | None = None
    ) -> dict[str, Any]:
        """A fresh ``working`` record (the caller adds a lease or the queued request).
        ``ttl_ms``: the caller's requested retention, honoured up to the server's own."""
        now = now_iso()
        return {
            "taskId": task_id,
            "status": "working",
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttlMs": self.ttl_ms if ttl_ms is None else min(ttl_ms, self.ttl_ms),
            "pollIntervalMs": self.poll_interval_ms,
            "owner": owner_of(principal),
            "responses": {},
        }

    # ------------------------------------------------------------------ tools/call
    async def start(
        self,
        ctx: Context,
        run: Callable[[], Awaitable[dict[str, Any]]],
        *,
        manual: bool,
    ) -> dict[str, Any]:
        """Run a tool call as a task; answer with the CreateTaskResult (or, for manual
        start, whatever happened before ``start_task``: an MRTR round or a plain result)."""
        era = ctx.meta.era
        if self.queue is not None and not manual:
            from .workers import enqueue

            return created_result(era, await enqueue(self, ctx))
        task_id = "task_" + secrets.token_urlsafe(18)
        created = anyio.Event()
        outcome: dict[str, Any] = {}
        handle = TaskHandle(self, task_id, ctx.principal)
        ctx._task = handle
        ctx.request  # noqa: B018 - keep the HTTP headers: begin() drops the exchange

        async def begin() -> None:
            if self.queue is not None:  # a worker replays the call, answers included
                from .workers import enqueue

                outcome["handed"] = await enqueue(self, ctx, task_id)
                created.set()
                raise TaskHandedOff()
            record = self.new_record(task_id, ctx.principal, requested_ttl(ctx.params))
            record.update(status_address(ctx))
            record["lease"] = time.time() + self.lease_s
            await self.backend.set_json(self._key(task_id), record, self._ttl_s())
            await self.remember(record)
            handle.started = True
            ctx.exchange = NULL_EXCHANGE
            outcome["created"] = record
            created.set()

        handle.begin = begin

        async def worker() -> None:
            try:
                if not manual:
                    await begin()
                result = await handle.supervise(run)
                if result is None:
                    if handle.started:
                        await self._finish(task_id, status="cancelled")
                    return
                if not handle.started:
                    outcome["result"] = result
                    return
                await self._finish(task_id, status="completed", result=result)
            except TaskHandedOff:
                pass
            except NeedInput as need:
                if handle.started:  # pragma: no cover - task asks go through TaskHandle
                    raise
                outcome["need"] = need
            except McpError as err:
                if handle.started:
                    await self._finish(task_id, status="failed", error=err.to_wire())
                else:
                    outcome["error"] = err
            except Exception as exc:
                log.exception("task %s crashed", task_id)
                failure = McpError(INTERNAL_ERROR, f"Task failed: {type(exc).__name__}: {exc}")
                if handle.started:
                    await self._finish(task_id, status="failed", error=failure.to_wire())
                else:
                    outcome["error"] = failure
            finally:
                self._wakeups.pop(task_id, None)
                created.set()

        self.server.spawn(worker)
        await created.wait()
        if "handed" in outcome:
            return created_result(era, outcome["handed"])
        if "created" in outcome:
            return created_result(era, {"resultType": "task", **public(outcome["created"])})
        if "need" in outcome:
            raise outcome["need"]
        if "error" in outcome:
            raise outcome["error"]
        result: dict[str, Any] = outcome.get("result", {"content": []})
        return result

    async def run_started(
        self, handle: TaskHandle, run: Callable[[], Awaitable[dict[str, Any]]]
    ) -> None:
        """Run a task whose record exists (a worker took it from the queue) and store
        its outcome; a handle that lost the task (handed back, or failed by its lease)
        stores nothing."""
        task_id = handle.task_id
        try:
            result = await handle.supervise(run)
            if handle.lost:
                return
            if result is None:
                await self._finish(task_id, status="cancelled")
            else:
                await self._finish(task_id, status="completed", result=result)
        except McpError as err:
            if not handle.lost:
                await self._finish(task_id, status="failed", error=err.to_wire())
        except Exception as exc:
            log.exception("task %s crashed", task_id)
            if not handle.lost:
                failure = McpError(INTERNAL_ERROR, f"Task failed: {type(exc).__name__}: {exc}")
                await self._finish(task_id, status="failed", error=failure.to_wire())
        finally:
            self._wakeups.pop(task_id, None)

    async def _finish(self, task_id: str, *, status: str, **extra: Any) -> None:
        """Store the outcome, retrying while the backend is unreachable (a result must not
        be lost to a Redis restart).  If it stays unreachable past the lease, the task is
        failed by whoever next reads it, with an error saying why."""

        def change(record: dict[str, Any]) -> None:
            if record["status"] in TERMINAL:
                return
            record["status"] = status
            record.pop("inputRequests", None)
            record.update(extra)

        delay = 0.1
        deadline = time.monotonic() + max(60.0, self.lease_s * 6)
        while True:
            try:
                await self._update(task_id, change)
                return
            except StateUnavailable as exc:  # an outage its watch logged: retry quietly
                error: Exception = exc
            except McpError:
                return  # the record is gone (expired or deleted): nothing to finish
            except Exception as exc:
                error = exc
                log.warning("task %s: state backend unavailable (%s); retrying", task_id, exc)
            if time.monotonic() > deadline:
                log.error("task %s: could not store its outcome: %s", task_id, error)
                return
            await anyio.sleep(delay)
            delay = min(delay * 2, 2.0)

    # ------------------------------------------------------------------ tasks/*
    async def dispatch(
        self, method: str, params: dict[str, Any], meta: RequestMeta, principal: object
    ) -> dict[str, Any]:
        """Answer a ``tasks/*`` request of ``principal`` (its own tasks only)."""
        if not declares_tasks(meta):
            raise tasks_required_error()
        record = await self._load(params.get("taskId"), principal)
        task_id = record["taskId"]
        if method == "tasks/get":
            record = await self._check_lease(record)
            return {"resultType": "complete", **detailed(record)}
        if method == "tasks/update":
            answers = params.get("inputResponses")
            if not isinstance(answers, dict):
                raise invalid_params("tasks/update requires an inputResponses object")

            if record["status"] not in TERMINAL:
                await self.answer(task_id, answers)
            return {"resultType": "complete"}
        if method == "tasks/cancel":
            if record["status"] not in TERMINAL:
                await self._update(task_id, request_cancel)
            return {"resultType": "complete"}
        raise McpError(-32601, f"Method not found: {method}")

    # ------------------------------------------------------------------ per-owner index
    def _index_key(self, owner: str) -> str:
        # (A key of its own kind: Redis keeps it as a list, so the JSON index that earlier
        # versions kept under "tasks-of:" is never read as one.)
        return f"task-list:{owner}"

    async def remember(self, record: dict[str, Any]) -> None:
        """Add a new task to its owner's index (what ``tasks/list`` reads); the index
        keeps the newest ``MAX_LISTED`` ids and expires with the tasks it names."""
        key = self._index_key(record["owner"])
        await self.backend.remember_recent(key, record["taskId"], MAX_LISTED, self._ttl_s())

    async def owned(self, principal: object) -> list[dict[str, Any]]:
        """The caller's tasks still on record, oldest first."""
        ids = await self.backend.recent(self._index_key(owner_of(principal)))
        records = []
        for task_id in ids:
            record = await self.backend.get_json(self._key(task_id))
            if record is not None and record.get("owner") == owner_of(principal):
                records.append(await self._check_lease(record))
        return records

    async def load(self, task_id: object, principal: object) -> dict[str, Any]:
        """The caller's task record, its lease checked; unknown (-32602) when the id is
        not the caller's."""
        return await self._check_lease(await self._load(task_id, principal))

    async def cancel_now(self, task_id: str) -> dict[str, Any]:
        """Cancel at once (the 2025-11-25 contract: the task is ``cancelled`` when the
        answer leaves); the running tool is asked to stop as with ``tasks/cancel``."""

        def change(record: dict[str, Any]) -> None:
            if record["status"] in TERMINAL:
                return
            record["status"] = "cancelled"
            record["cancelRequested"] = True
            record.pop("inputRequests", None)

        return await self._update(task_id, change)

    async def answer(self, task_id: str, answers: dict[str, Any]) -> None:
        """Deliver answers to outstanding input requests (``tasks/update``'s merge)."""

        def merge(rec: dict[str, Any]) -> None:
            outstanding = rec.get("inputRequests") or {}
            for key, value in answers.items():
                if key in outstanding and key not in rec["responses"]:
                    rec["responses"][key] = value
                    del outstanding[key]
            if rec["status"] == "input_required":
                if outstanding:
                    rec["inputRequests"] = outstanding
                else:
                    rec.pop("inputRequests", None)
                    rec["status"] = "working"

        await self._update(task_id, merge)

    async def changed(self, task_id: str, seconds: float) -> None:
        """Wait until this replica updates the task, or ``seconds`` pass (another
        replica's update is seen by the next read)."""
        wake = self._wakeups.setdefault(task_id, anyio.Event())
        with anyio.move_on_after(seconds):
            await wake.wait()
        if wake.is_set() and self._wakeups.get(task_id) is wake:
            self._wakeups[task_id] = anyio.Event()  # the next wait waits for a new change

    def settled(self, task_id: str) -> None:
        """A waiter saw the task end: drop its wake-up (none is left for an ended task)."""
        self._wakeups.pop(task_id, None)

    async def _check_lease(self, record: dict[str, Any]) -> dict[str, Any]:
        if record["status"] in TERMINAL or record.get("lease", 0) >= time.time():
            return record
        if "queued" in record and ("runner" not in record or record.get("rerun")):
            return record  # waiting for a worker, or to be run again by another one
        error = {
            "code": INTERNAL_ERROR,
            "message": "The server process running this task stopped before it finished; "
            "start the task again",
        }

        def fail(rec: dict[str, Any]) -> None:
            if (
                rec["status"] not in TERMINAL
                and rec.get("lease", 0) < time.time()
                and not ("queued" in rec and ("runner" not in rec or rec.get("rerun")))
            ):
                rec["status"] = "failed"
                rec["error"] = error
                rec.pop("inputRequests", None)

        return await self._update(record["taskId"], fail)
