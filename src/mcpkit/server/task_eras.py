"""Where the two tasks protocols differ: one engine (:mod:`.tasks`), two wire forms.

The 2026-07-28 tasks extension (SEP-2663) and the 2025-11-25 core tasks (SEP-1686) share
the store, the worker queue and the caller binding.  This module holds everything that
is one era's only:

* 2025-11-25 names the Task fields ``ttl``/``pollInterval`` (2026-07-28: ``ttlMs``/
  ``pollIntervalMs``) and wraps a created task as ``{"task": Task}`` (2026-07-28: flat,
  with ``resultType: "task"``);
* a 2025-11-25 client asks for a task with the ``task`` request parameter, within what the
  tool's ``execution.taskSupport`` allows, and the server declares ``tasks`` (with
  ``requests.tools.call``, ``list`` and ``cancel``) in its capabilities;
* ``tasks/result`` blocks until the task ends and answers with the tool's result (or its
  error); input the task needs on the way is sent to the client as ordinary requests on
  that ``tasks/result`` exchange, tagged with the related task;
* ``tasks/list`` lists the caller's tasks; ``tasks/cancel`` refuses a finished task
  (-32602) and answers with the task already ``cancelled``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..types.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    McpError,
    invalid_params,
    method_not_found,
)
from .task_records import TERMINAL

if TYPE_CHECKING:
    from ..types.versions import Era
    from .context import Context
    from .registry import ToolEntry
    from .tasks import TaskManager

#: ``_meta`` key tying a message to the task it belongs to (2025-11-25).
RELATED_TASK = "io.modelcontextprotocol/related-task"

#: The server's ``tasks`` capability when a tool may run as a task (2025-11-25).
LEGACY_TASKS_CAPABILITY: dict[str, Any] = {
    "list": {},
    "cancel": {},
    "requests": {"tools": {"call": {}}},
}

#: The first handshake revision with tasks.
TASKS_SINCE = "2025-11-25"

#: How long one ``tasks/result`` waits between reads of a running task's record.
RESULT_POLL_S = 0.25

_RENAMED = {"ttlMs": "ttl", "pollIntervalMs": "pollInterval"}
_LEGACY_FIELDS = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt")


def legacy_task(fields: dict[str, Any]) -> dict[str, Any]:
    """The 2025-11-25 ``Task`` of a record (or of its 2026-07-28 public fields)."""
    task = {k: fields[k] for k in _LEGACY_FIELDS if k in fields}
    for modern, legacy in _RENAMED.items():
        if modern in fields:
            task[legacy] = fields[modern]
    task.setdefault("ttl", None)
    return task


def created_result(era: Era, created: dict[str, Any]) -> dict[str, Any]:
    """The answer to a ``tools/call`` that became a task, given its 2026-07-28 form."""
    if era == "modern":
        return created
    return {"task": legacy_task(created)}


def wants_task(tool: ToolEntry, params: dict[str, Any], protocol_version: str) -> bool:
    """Whether a handshake-era ``tools/call`` runs as a task: the caller sent ``task`` and
    the tool allows it.  -32601 when the request and the tool's ``execution.taskSupport``
    disagree (a task for a tool that forbids one; none for a tool that requires one).
    Before 2025-11-25 there are no tasks: every call runs to its result."""
    if protocol_version < TASKS_SINCE:
        return False
    asked = "task" in params
    if asked and not isinstance(params["task"], dict):
        raise invalid_params("tools/call task must be an object")
    if asked and tool.task_support == "forbidden":
        raise McpError(
            METHOD_NOT_FOUND,
            f"Tool {tool.name} does not run as a task (execution.taskSupport is forbidden)",
            {"name": tool.name},
        )
    if not asked and tool.task_support == "required":
        raise McpError(
            METHOD_NOT_FOUND,
            f"Tool {tool.name} must be called as a task (execution.taskSupport is required)",
            {"name": tool.name},
        )
    return asked


def with_task_support(
    tools: list[dict[str, Any]], support: Mapping[str, str]
) -> list[dict[str, Any]]:
    """2025-11-25 ``tools/list`` entries with ``execution.taskSupport`` for the tools that
    may run as tasks (``support`` maps their names; the others are left as they are)."""
    out = []
    for tool in tools:
        mode = support.get(tool.get("name", ""))
        if mode is None or mode == "forbidden":
            out.append(tool)
        else:
            out.append({**tool, "execution": {**tool.get("execution", {}), "taskSupport": mode}})
    return out


async def serve_legacy(manager: TaskManager, ctx: Context) -> dict[str, Any]:
    """Answer a 2025-11-25 ``tasks/*`` request of ``ctx.principal`` (its own tasks only)."""
    method = ctx.method
    if method == "tasks/list":
        return await _list(manager, ctx)
    record = await manager.load(ctx.params.get("taskId"), ctx.principal)
    if method == "tasks/get":
        return legacy_task(record)
    if method == "tasks/cancel":
        if record["status"] in TERMINAL:
            raise invalid_params(
                f"Task {record['taskId']} already ended ({record['status']})",
                {"taskId": record["taskId"], "status": record["status"]},
            )
        return legacy_task(await manager.cancel_now(record["taskId"]))
    if method == "tasks/result":
        return await _result(manager, ctx, record)
    raise method_not_found(method)


async def _list(manager: TaskManager, ctx: Context) -> dict[str, Any]:
    tasks = [legacy_task(record) for record in await manager.owned(ctx.principal)]
    offset = cursor_offset(ctx.params.get("cursor"), len(tasks))
    end = offset + manager.server.page_size
    return listed(tasks[offset:end], end, len(tasks))


def listed(page: list[dict[str, Any]], end: int, count: int) -> dict[str, Any]:
    """A ``tasks/list`` result: ``page``, and the cursor of what follows it (``end`` of
    ``count``) when something does."""
    result: dict[str, Any] = {"tasks": page}
    if end < count:
        result["nextCursor"] = base64.urlsafe_b64encode(str(end).encode()).decode()
    return result


def cursor_offset(cursor: object, count: int) -> int:
    """Where a ``tasks/list`` cursor (:func:`listed`) resumes in a list of ``count``;
    -32602 for a cursor no list gave."""
    if cursor is None:
        return 0
    try:
        offset = int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid_params("Invalid cursor") from None
    if not 0 <= offset <= count:
        raise invalid_params("Invalid cursor")
    return offset


async def _result(manager: TaskManager, ctx: Context, record: dict[str, Any]) -> dict[str, Any]:
    """Block until the task ends; serve its input requests to this caller meanwhile."""
    task_id = record["taskId"]
    while record["status"] not in TERMINAL:
        asks = record["status"] == "input_required" and record.get("inputRequests")
        # One waiter on this replica asks the client; the others wait for the answers.
        if asks and task_id not in manager.serving_input:
            manager.serving_input.add(task_id)
            try:
                await _serve_input(manager, ctx, task_id, record["inputRequests"])
            finally:
                manager.serving_input.discard(task_id)
        else:
            await manager.changed(task_id, RESULT_POLL_S)
        record = await manager.load(task_id, ctx.principal)
    manager.settled(task_id)
    return _payload(record)


async def _serve_input(
    manager: TaskManager, ctx: Context, task_id: str, requests: dict[str, Any]
) -> None:
    """Send the task's outstanding input requests to the client, one after another, and
    deliver each answer to the task."""
    for key, spec in requests.items():
        params = dict(spec.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK: {"taskId": task_id}}
        answer = await ctx.exchange.request(spec["method"], params)
        await manager.answer(task_id, {key: answer})


def _payload(record: dict[str, Any]) -> dict[str, Any]:
    """What the task's ``tools/call`` would have answered: its result, or its error."""
    task_id = record["taskId"]
    related = {RELATED_TASK: {"taskId": task_id}}
    if record["status"] == "completed":
        result: dict[str, Any] = dict(record.get("result") or {"content": []})
        result["_meta"] = {**(result.get("_meta") or {}), **related}
        return result
    if record["status"] == "failed":
        error = record.get("error") or {}
        raise McpError(
            error.get("code", INTERNAL_ERROR),
            str(error.get("message", f"Task {task_id} failed")),
            {**(error.get("data") or {}), "taskId": task_id}
            if isinstance(error.get("data", {}), dict)
            else error.get("data"),
        )
    raise McpError(INTERNAL_ERROR, f"Task {task_id} was cancelled", {"taskId": task_id})
