"""Task workers: task-backed tool calls run by ``mcpkit worker`` processes, not replicas.

A replica whose server has ``task_workers = "external"`` answers a task-backed
``tools/call`` by storing the task record, with the request in it, and adding the task id
to the Redis stream of :mod:`mcpkit.state.queue` (:func:`enqueue`); ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` keep working on any replica because they only touch
the record.  A :class:`Worker` reads the stream as a member of one consumer group, runs
each call through the server's middleware chain and handler (the same chain an in-process
task runs), stores the outcome and acknowledges the entry.

Delivery, exactly as the tool is annotated:

* A worker marks the record ``runner`` (itself) and renews a lease in it before the tool
  starts.  If it dies (SIGKILL, a lost machine), its entry's idle time in the stream and
  its lease both run out; another worker takes the entry with ``XAUTOCLAIM``.
* A tool annotated ``idempotentHint: true`` (or ``readOnlyHint: true``: it has no effects
  to repeat) runs again on the new worker: **at least once**.  Answers given through
  ``tasks/update`` are kept in the record, so a task that asked for input does not ask
  again.
* Any other tool is **at most once**: a record that shows the tool started on a worker
  that is gone is marked ``failed`` with the error a task of a dead replica gets ("The
  server process running this task stopped before it finished; start the task again").
  A task taken from the stream but not yet started (its record has no ``runner``) runs,
  since it never ran.

Graceful stop (SIGTERM, see ``mcpkit worker``): the worker stops reading and reclaiming,
lets running tools finish until a deadline, then hands back what is left: a re-runnable
task goes back to the end of the queue for another worker, any other task is failed with
an error saying the worker was stopped.  Nothing is left claimed by a worker that exits.

Why the worker still renews a lease in the record, when the stream already knows who
holds what: replicas read only the record (``tasks/get`` must stay a key lookup), and it is
the record's ``runner`` that lets a reclaiming worker tell "never started" from "started
elsewhere", which the stream cannot.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.negotiation import parse_modern_meta
from ..runtime.exchange import Exchange
from ..state.base import StateUnavailable
from ..state.queue import QueuedEntry, QueueFull
from ..types.errors import INTERNAL_ERROR, McpError
from .context import Context
from .middleware.ratelimit import RATE_LIMITED
from .task_handle import TaskHandle
from .task_records import PUBLIC_FIELDS, TERMINAL, requested_ttl, status_address
from .tasks import TaskManager

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from .registry import ToolEntry
    from .server import Server

__all__ = ["Worker", "enqueue", "reruns"]

log = logging.getLogger("mcpkit.workers")

#: Request headers never copied into a stored task: credentials stay with the replica
#: that checked them (no token passthrough; the worker gets the principal instead).
_SECRET_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})

STOPPED_ERROR = (
    "The worker running this task was stopped before the task finished; start the task again"
)


def reruns(tool: ToolEntry | None) -> bool:
    """Whether a task of ``tool`` may run again after its worker died: annotated
    ``idempotentHint`` or ``readOnlyHint`` true (the gateway retries the same tools)."""
    notes = tool.wire.get("annotations") if tool is not None else None
    if not isinstance(notes, dict):
        return False
    return notes.get("idempotentHint") is True or notes.get("readOnlyHint") is True


async def enqueue(manager: TaskManager, ctx: Context, task_id: str | None = None) -> dict[str, Any]:
    """Store the task with its request and queue it for a worker; the CreateTaskResult.

    The record is written before the stream entry, so a worker never reads an id whose
    record is missing, and ``tasks/get`` resolves as soon as the answer is sent.  For a
    ``task_start="manual"`` tool this runs at ``ctx.start_task()``: the stored request is
    the round that got there, with its ``inputResponses``/``requestState``, so the worker
    replays the tool's synchronous part with the same answers (MRTR's replay rule: no
    side effects before the last input)."""
    task_id = task_id or "task_" + secrets.token_urlsafe(18)
    record = manager.new_record(task_id, ctx.principal, requested_ttl(ctx.params))
    name = ctx.params.get("name")
    tool = manager.server.tools.get(name) if isinstance(name, str) else None
    headers = {k: v for k, v in ctx.request.headers.items() if k not in _SECRET_HEADERS}
    record.update(status_address(ctx))
    record["statusMessage"] = "queued"
    record["rerun"] = reruns(tool)
    record["queued"] = {
        "params": ctx.params,
        "headers": headers,
        "principal": None if ctx.principal is None else str(ctx.principal),
    }
    key = manager._key(task_id)
    await manager.backend.set_json(key, record, manager._ttl_s())
    await manager.remember(record)
    try:
        await manager.queue.enqueue(task_id, record["owner"], manager.max_queued)
    except QueueFull as full:
        await manager.backend.delete(key)
        raise McpError(
            RATE_LIMITED,
            f"Too many unfinished tasks: {full.count} queued or running for this caller "
            f"(limit {full.limit}); wait for some to finish, or cancel them",
            {"queued": full.count, "limit": full.limit},
            http_status=429,
        ) from None
    except BaseException:
        await manager.backend.delete(key)
        raise
    return {"resultType": "task", **{k: v for k, v in record.items() if k in PUBLIC_FIELDS}}


class _Headers(Exchange):
    """The stored request's headers (``ctx.request.headers``); nothing reaches a client
    from a worker (task notifications go through the record)."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class _Skip(Exception):
    """The claim found nothing to run: ``why`` is "settled" or "busy" (``runner``)."""

    def __init__(self, why: str, runner: str | None = None) -> None:
        self.why = why
        self.runner = runner


class Worker:
    """Runs queued task-backed tool calls of ``server`` (one per process is typical).

    ``concurrency``: tools running at once; ``grace_s``: how long a stop waits for them
    before handing them back; ``restore_principal`` turns the stored principal key back
    into an object for the middleware (default: the key string, which compares equal to
    the :class:`~mcpkit.auth.Principal` it came from)."""

    def __init__(
        self,
        server: Server,
        *,
        concurrency: int = 16,
        grace_s: float = 30.0,
        name: str | None = None,
        block_ms: int = 1000,
        restore_principal: Callable[[str], object] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.server = server
        self.concurrency = concurrency
        self.grace_s = grace_s
        self.block_ms = block_ms
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.restore_principal = restore_principal
        self.stopping = anyio.Event()
        #: Entries this worker holds -> the handle of the running tool (None: claiming).
        self.active: dict[str, TaskHandle | None] = {}
        self._freed = anyio.Event()
        self._handing_back = False
        self._jobs: TaskGroup | None = None  # the task group running entries, once run() made it
        server.task_workers = "external"
        server._tasks = None  # a manager made before now would run tasks in-process

    def stop(self) -> None:
        """Stop taking work; running tools get ``grace_s`` to finish (see :meth:`run`)."""
        self.stopping.set()

    @property
    def manager(self) -> TaskManager:
        manager: TaskManager = self.server.tasks
        return manager

    async def run(self) -> None:
        """Take and run tasks until :meth:`stop`; then finish or hand back, and return."""
        async with self.server.running():
            queue = self.manager.queue
            await queue.ensure_group()
            log.info("worker %s: taking tasks from %s", self.name, queue.stream)
            async with anyio.create_task_group() as beats:
                beats.start_soon(self._heartbeat)
                async with anyio.create_task_group() as jobs:
                    self._jobs = jobs
                    await self._take_new(jobs)
                    with anyio.move_on_after(self.grace_s):
                        while self.active:
                            await self._wait_freed(None)
                    self._hand_back()
                beats.cancel_scope.cancel()
            if not self.active:
                await queue.forget(self.name)
            log.info("worker %s: stopped", self.name)

    async def _take_new(self, jobs: TaskGroup) -> None:
        queue = self.manager.queue
        while not self.stopping.is_set():
            free = self.concurrency - len(self.active)
            if free <= 0:
                await self._wait_freed(self.block_ms / 1000)
                continue
            try:
                entries = await queue.read(self.name, free, self.block_ms)
            except StateUnavailable:  # Redis restarting (logged once by its watch): wait
                await self._pause(1.0)
                continue
            except Exception as exc:
                log.warning("worker %s: cannot read the queue (%s); retrying", self.name, exc)
                await self._pause(1.0)
                continue
            for entry in entries:
                self._start(jobs, entry)

    def _start(self, jobs: TaskGroup, entry: QueuedEntry) -> None:
        if entry.id in self.active:
            return
        self.active[entry.id] = None
        jobs.start_soon(self._take, entry)

    async def _wait_freed(self, timeout: float | None) -> None:
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as tg:

                async def either(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(either, self._freed)
                if timeout is not None:
                    tg.start_soon(either, self.stopping)
        if self._freed.is_set():
            self._freed = anyio.Event()

    async def _pause(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await self.stopping.wait()

    async def _heartbeat(self) -> None:
        """Keep our entries from looking abandoned, and take those of dead workers."""
        queue = self.manager.queue
        lease_ms = int(self.manager.lease_s * 1000)
        while True:
            try:
                await queue.touch(self.name, list(self.active))
                free = self.concurrency - len(self.active)
                if free > 0 and self._jobs is not None and not self.stopping.is_set():
                    for entry in await queue.reclaim(self.name, lease_ms, free):
                        log.info("worker %s: reclaimed %s", self.name, entry.task_id)
                        self._start(self._jobs, entry)
            except StateUnavailable:
                pass  # Redis restarting: its watch logged it once; the next beat tries again
            except Exception as exc:
                log.warning("worker %s: heartbeat failed (%s)", self.name, exc)
            await anyio.sleep(self.manager.lease_s / 4)

    def _hand_back(self) -> None:
        """The grace period is over: stop every tool still running (their jobs then
        requeue or fail them, see :meth:`_settle_dropped`)."""
        self._handing_back = True
        for handle in self.active.values():
            if handle is not None:
                handle.drop()

    # ------------------------------------------------------------------ one entry
    async def _take(self, entry: QueuedEntry) -> None:
        queue = self.manager.queue
        try:
            try:
                record = await self._claim(entry.task_id)
            except _Skip as skip:
                if skip.why == "busy" and skip.runner is not None:
                    await queue.give(skip.runner, entry.id)  # its worker is alive
                else:
                    await queue.ack(entry.id)
                return
            except StateUnavailable:
                raise  # not a missing record: the entry stays queued (see below)
            except McpError:  # the record expired or was deleted
                await queue.ack(entry.id)
                return
            if record["status"] in TERMINAL:  # we failed it: it started on a dead worker
                await queue.ack(entry.id)
                return
            handle = self._handle(record)
            self.active[entry.id] = handle
            ctx = self._context(record, handle)
            chain = self.server._chains["tools/call"]
            if self._handing_back:  # stopped while claiming: do not start it
                handle.lost = True
            else:
                await self.manager.run_started(handle, partial(chain, ctx))
            if handle.lost:
                await self._settle_dropped(entry, record)
            else:
                await queue.ack(entry.id)
        except StateUnavailable:
            pass  # an outage its watch logged: the unacknowledged entry is reclaimed later
        except Exception:
            log.exception("worker %s: task %s", self.name, entry.task_id)
        finally:
            self.active.pop(entry.id, None)
            self._freed.set()

    async def _claim(self, task_id: str) -> dict[str, Any]:
        """Become the task's runner (record CAS).  A task that started on a worker that
        is gone and may not run twice is failed instead (the record is returned
        terminal); :class:`_Skip` when there is nothing to do."""
        me, lease_s = self.name, self.manager.lease_s

        def change(record: dict[str, Any]) -> None:
            now = time.time()
            if record["status"] in TERMINAL:
                raise _Skip("settled")
            runner = record.get("runner")
            if runner is not None and runner != me and record.get("lease", 0) >= now:
                raise _Skip("busy", runner)
            if runner is not None and not record.get("rerun"):
                record["status"] = "failed"
                record["error"] = {
                    "code": INTERNAL_ERROR,
                    "message": "The server process running this task stopped before it "
                    "finished; start the task again",
                }
                record.pop("inputRequests", None)
                record.pop("statusMessage", None)
                return
            record["runner"] = me
            record["attempt"] = int(record.get("attempt", 0)) + 1
            record["lease"] = now + lease_s
            record.pop("statusMessage", None)

        return await self.manager._update(task_id, change)

    def _handle(self, record: dict[str, Any]) -> TaskHandle:
        principal = record["queued"].get("principal")
        handle = TaskHandle(self.manager, record["taskId"], principal)
        handle.runner = self.name
        name = record["queued"]["params"].get("name")
        tool = self.server.tools.get(name) if isinstance(name, str) else None
        if tool is not None and tool.task_manual:
            # Replay: input before start_task() comes from the stored round's answers.

            async def begin() -> None:
                handle.started = True

            handle.begin = begin
        else:
            handle.started = True
        return handle

    def _context(self, record: dict[str, Any], handle: TaskHandle) -> Context:
        stored = record["queued"]
        params: dict[str, Any] = stored["params"]
        principal = stored.get("principal")
        if principal is not None and self.restore_principal is not None:
            principal = self.restore_principal(principal)
        ctx = Context(
            self.server,
            parse_modern_meta(params, None),
            None,
            _Headers(stored.get("headers") or {}),
            method="tools/call",
            params=params,
            principal=principal,
        )
        ctx._task = handle
        return ctx

    async def _settle_dropped(self, entry: QueuedEntry, record: dict[str, Any]) -> None:
        """A tool we stopped: at a graceful stop, requeue it (re-runnable) or fail it;
        when another worker took it over, leave it to them."""
        queue = self.manager.queue
        if not self._handing_back:
            current = await self.manager.backend.get_json(self.manager._key(entry.task_id))
            if current is None or current["status"] in TERMINAL:
                await queue.ack(entry.id)
            return
        me = self.name
        if record.get("rerun"):

            def release(rec: dict[str, Any]) -> None:
                if rec["status"] not in TERMINAL and rec.get("runner") == me:
                    del rec["runner"]
                    rec.pop("lease", None)
                    rec["statusMessage"] = "queued"

            after = await self.manager._update(entry.task_id, release)
            if after["status"] in TERMINAL:  # it finished as we stopped it
                await queue.ack(entry.id)
            else:
                await queue.requeue(entry.id, entry.task_id)
                log.info("worker %s: handed back %s", me, entry.task_id)
            return

        def fail(rec: dict[str, Any]) -> None:
            if rec["status"] not in TERMINAL and rec.get("runner") == me:
                rec["status"] = "failed"
                rec["error"] = {"code": INTERNAL_ERROR, "message": STOPPED_ERROR}
                rec.pop("inputRequests", None)

        await self.manager._update(entry.task_id, fail)
        await queue.ack(entry.id)
