"""The 2025-11-25 tasks (SEP-1686) of a 2025-11-25 caller, through the gateway.

A ``tools/call`` with the ``task`` parameter is forwarded as a task request to the
upstream serving the tool, in the upstream's era: the same request to a 2025-11-25
upstream; to a 2026-07-28 one, the call with the tasks extension declared, its created
task given back in the 2025-11-25 form (:func:`~mcpkit.server.task_eras.legacy_task`).
The task id the caller gets is the upstream's, routable (``<upstream>~<id>``) and sealed
for the caller as for a modern task (:mod:`.binding`): ``tasks/get``, ``tasks/result``
and ``tasks/cancel`` open it with the caller's identity, and another caller's id is
answered as an unknown one.  ``tasks/result`` of a 2026-07-28 upstream's task polls its
``tasks/get`` until the task ends and answers with its result or its error.

``tasks/list`` is not offered: the upstreams see the gateway's identity for every caller,
so their lists would show every caller's tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ..server.mount import TASK_SEPARATOR
from ..server.task_eras import RELATED_TASK, legacy_task
from ..transports.client_base import ServerError
from ..types.errors import INTERNAL_ERROR, McpError, invalid_params
from ..types.versions import META_CLIENT_CAPABILITIES, TASKS_EXTENSION
from .binding import unknown_task
from .routing import name_owner

if TYPE_CHECKING:
    from ..client import Client
    from ..server.context import Context
    from .server import GatewayServer

#: The gateway's ``tasks`` capability to a 2025-11-25 caller (no ``list``: see above).
CAPABILITY: dict[str, Any] = {"cancel": {}, "requests": {"tools": {"call": {}}}}

#: The task methods a 2025-11-25 caller may send through the gateway.
METHODS = ("tasks/get", "tasks/result", "tasks/cancel")

#: A 2026-07-28 task's states after which nothing changes.
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: How long a cancelled 2026-07-28 task is read for its end (:func:`_settled`).
_CANCEL_WAIT_S = 5.0

#: What a 2026-07-28 upstream is told the caller takes: tasks.
_MODERN_TASKS: dict[str, Any] = {META_CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}


def applies(ctx: Context) -> bool:
    """Whether ``ctx`` is a 2025-11-25 caller's task request (a task-augmented
    ``tools/call``, or one of :data:`METHODS`)."""
    if ctx.meta.era != "legacy":
        return False
    if ctx.method == "tools/call":
        return isinstance(ctx.params.get("task"), dict)
    return ctx.method in METHODS


async def route(gateway: GatewayServer, ctx: Context) -> dict[str, Any]:
    """Answer a request :func:`applies` to."""
    try:
        if ctx.method == "tools/call":
            return await _create(gateway, ctx)
        return await _task_method(gateway, ctx)
    except ServerError as exc:
        raise McpError(exc.code, exc.message, exc.data) from None


async def _create(gateway: GatewayServer, ctx: Context) -> dict[str, Any]:
    name = ctx.params.get("name")
    found = await name_owner(gateway.upstreams, name) if isinstance(name, str) else None
    if found is None:
        raise invalid_params(f"Unknown name: {name}", {"name": name})
    upstream, original = found
    call = {"name": original, "arguments": ctx.params.get("arguments") or {}}

    async def send(client: Client) -> dict[str, Any]:
        if client.era == "modern":
            created = await client.request("tools/call", call, meta=_MODERN_TASKS)
            if created.get("resultType") != "task":
                raise McpError(
                    INTERNAL_ERROR,
                    f"upstream {upstream.name} answered {name} without starting a task",
                )
            return legacy_task(created)
        answer = await client.request("tools/call", {**call, "task": ctx.params["task"]})
        task: dict[str, Any] = answer["task"]
        return task

    task = await upstream.call(send)
    routable = f"{upstream.name}{TASK_SEPARATOR}{task['taskId']}"
    sealed = gateway.bindings.seal_task(ctx.principal, {"taskId": routable})
    return {"task": {**task, "taskId": sealed["taskId"]}}


async def _task_method(gateway: GatewayServer, ctx: Context) -> dict[str, Any]:
    front = ctx.params.get("taskId")
    routable = gateway.bindings.open_task(ctx.principal, front)
    assert isinstance(front, str)  # (open_task accepted it)
    owner, _, task_id = routable.partition(TASK_SEPARATOR)
    upstream = next((u for u in gateway.upstreams if u.name == owner), None)
    if upstream is None:  # (an upstream a reload removed)
        raise unknown_task(front)
    try:
        answer = await upstream.call(lambda client: _ask(client, ctx.method, task_id))
    except (McpError, ServerError) as exc:
        error = exc if isinstance(exc, McpError) else McpError(exc.code, exc.message, exc.data)
        raise gateway.bindings.unknown_as_front(front, _named_as(front, task_id, error)) from None
    return _as_front(front, answer)


async def _ask(client: Client, method: str, task_id: str) -> dict[str, Any]:
    """``method`` on the upstream's task ``task_id``, answered in the 2025-11-25 form."""
    if client.era != "modern":
        if method == "tasks/result":  # (it waits for the task to end)
            return await client.request(method, {"taskId": task_id}, timeout=None)
        return await client.request(method, {"taskId": task_id})
    if method == "tasks/result":
        return await _modern_result(client, task_id)
    if method == "tasks/cancel":
        await client.request("tasks/cancel", {"taskId": task_id}, meta=_MODERN_TASKS)
        return legacy_task(await _settled(client, task_id))
    return legacy_task(await client.request("tasks/get", {"taskId": task_id}, meta=_MODERN_TASKS))


async def _settled(client: Client, task_id: str) -> dict[str, Any]:
    """A 2026-07-28 task after its cancellation was asked: the extension cancels it in the
    background, while a 2025-11-25 ``tasks/cancel`` answers with the cancelled task, so the
    task is read until it ends (at most :data:`_CANCEL_WAIT_S`; then as it stands)."""
    task = await client.request("tasks/get", {"taskId": task_id}, meta=_MODERN_TASKS)
    with anyio.move_on_after(_CANCEL_WAIT_S):
        while task.get("status") not in _TERMINAL:
            await anyio.sleep(0.05)
            task = await client.request("tasks/get", {"taskId": task_id}, meta=_MODERN_TASKS)
    return task


async def _modern_result(client: Client, task_id: str) -> dict[str, Any]:
    """A 2026-07-28 task's outcome, once it ends: its result, or its error raised."""
    while True:
        task = await client.request("tasks/get", {"taskId": task_id}, meta=_MODERN_TASKS)
        status = task.get("status")
        if status in _TERMINAL:
            break
        interval = task.get("pollIntervalMs")
        await anyio.sleep(interval / 1000 if isinstance(interval, int) and interval > 0 else 0.25)
    if status == "completed":
        result: dict[str, Any] = dict(task.get("result") or {"content": []})
        result.pop("resultType", None)
        return result
    if status == "failed":
        error = task.get("error") or {}
        raise McpError(
            error.get("code", INTERNAL_ERROR),
            str(error.get("message", f"Task {task_id} failed")),
            error.get("data"),
        )
    raise McpError(INTERNAL_ERROR, f"Task {task_id} was cancelled", {"taskId": task_id})


def _as_front(front: str, answer: dict[str, Any]) -> dict[str, Any]:
    """An upstream's answer naming the task by the caller's id (its ``taskId`` and the
    related-task ``_meta`` of a ``tasks/result``)."""
    if "taskId" in answer:
        answer = {**answer, "taskId": front}
    meta = answer.get("_meta")
    if isinstance(meta, dict) and RELATED_TASK in meta:
        answer = {**answer, "_meta": {**meta, RELATED_TASK: {"taskId": front}}}
    return answer


def _named_as(front: str, task_id: str, error: McpError) -> McpError:
    """An upstream's error naming its own task id, naming the caller's instead."""
    data = error.data
    if isinstance(data, dict) and data.get("taskId") == task_id:
        return McpError(
            error.code, error.message.replace(task_id, front), {**data, "taskId": front}
        )
    return error
