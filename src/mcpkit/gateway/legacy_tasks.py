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

``tasks/list`` is the gateway's own: the upstreams see the gateway's identity for every
caller, so their lists would show every caller's tasks.  Each task a caller creates here is
recorded in that caller's index in the gateway's state backend
(:meth:`~.binding.Bindings.remember_task`); the list reads the caller's tasks from their
upstreams (``tasks/get``), named by the caller's ids.  A task its upstream no longer knows
(expired, or its upstream down) is left out.

``notifications/tasks/status`` a 2025-11-25 upstream sends for a task reaches the caller
session that created it through the gateway, the task named by that caller's id: the
gateway remembers, in the process holding the upstream's session, which caller session
each upstream task belongs to, and relays nothing it cannot place.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio

from ..runtime.changes import ChangeEvent
from ..runtime.listen import TASK_STATUS, session_key
from ..server.mount import TASK_SEPARATOR
from ..server.task_eras import RELATED_TASK, cursor_offset, legacy_task, listed
from ..transports.client_base import ServerError
from ..types.errors import INTERNAL_ERROR, McpError, invalid_params
from ..types.versions import META_CLIENT_CAPABILITIES, TASKS_EXTENSION
from .binding import unknown_task
from .routing import name_owner

if TYPE_CHECKING:
    from ..client import Client
    from ..server.context import Context
    from .server import GatewayServer

#: The gateway's ``tasks`` capability to a 2025-11-25 caller.
CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}

#: The task methods a 2025-11-25 caller may send through the gateway.
METHODS = ("tasks/get", "tasks/result", "tasks/cancel", "tasks/list")

#: How many tasks one page of the gateway's ``tasks/list`` names.
PAGE_SIZE = 50
#: How many upstream tasks the status relay remembers the caller session of (the oldest
#: are forgotten first; a task that ended is forgotten at once).
_RELAYED = 10_000

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
        if ctx.method == "tasks/list":
            return await _list(gateway, ctx)
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

    relay = _relay_of(gateway)
    routed: dict[str, str] = {}

    async def send(client: Client) -> dict[str, Any]:
        if client.era == "modern":
            created = await client.request("tools/call", call, meta=_MODERN_TASKS)
            if created.get("resultType") != "task":
                raise McpError(
                    INTERNAL_ERROR,
                    f"upstream {upstream.name} answered {name} without starting a task",
                )
            return legacy_task(created)
        relay.watch(client, upstream.name)
        answer = await client.request("tools/call", {**call, "task": ctx.params["task"]})
        task: dict[str, Any] = answer["task"]
        routed["client"] = task["taskId"]
        return task

    task = await upstream.call(send)
    routable = f"{upstream.name}{TASK_SEPARATOR}{task['taskId']}"
    front = gateway.bindings.seal_task(ctx.principal, {"taskId": routable})["taskId"]
    if "client" in routed and ctx.session is not None:
        relay.place(upstream.name, task["taskId"], front, session_key(ctx.session.id))
    await gateway.bindings.remember_task(ctx.principal, front)
    return {"task": {**task, "taskId": front}}


async def _list(gateway: GatewayServer, ctx: Context) -> dict[str, Any]:
    """The caller's tasks, a page at a time, each read from its upstream."""
    owned = await gateway.bindings.tasks_of(ctx.principal)
    offset = cursor_offset(ctx.params.get("cursor"), len(owned))
    end = offset + PAGE_SIZE
    tasks = []
    for front, routable in owned[offset:end]:
        task = await _current(gateway, front, routable)
        if task is not None:
            tasks.append(task)
    return listed(tasks, end, len(owned))


async def _current(gateway: GatewayServer, front: str, routable: str) -> dict[str, Any] | None:
    """The caller's task ``front`` as its upstream has it now (None: gone, or out of
    reach)."""
    owner, _, task_id = routable.partition(TASK_SEPARATOR)
    upstream = next((u for u in gateway.upstreams if u.name == owner), None)
    if upstream is None:
        return None
    try:
        answer = await upstream.call(lambda client: _ask(client, "tasks/get", task_id))
    except (McpError, ServerError):
        return None
    return _as_front(front, answer)


class _StatusRelay:
    """Which caller session each 2025-11-25 upstream task belongs to, and the relay of
    the upstream's ``notifications/tasks/status`` to it (one per gateway)."""

    def __init__(self, gateway: GatewayServer) -> None:
        self._gateway = weakref.ref(gateway)
        self._watched: weakref.WeakSet[Client] = weakref.WeakSet()
        #: (upstream name, upstream task id) -> (the caller's task id, its session key).
        self._places: OrderedDict[tuple[str, str], tuple[str, str]] = OrderedDict()

    def watch(self, client: Client, upstream: str) -> None:
        """Relay the status notifications of the upstream connection ``client``."""
        if client in self._watched:
            return
        self._watched.add(client)

        def relay(params: dict[str, Any]) -> None:
            self._relay(upstream, params)

        client.on_notification("notifications/tasks/status", relay)

    def place(self, upstream: str, task_id: str, front: str, session: str) -> None:
        self._places[(upstream, task_id)] = (front, session)
        while len(self._places) > _RELAYED:
            self._places.popitem(last=False)

    def _relay(self, upstream: str, params: dict[str, Any]) -> None:
        key = (upstream, str(params.get("taskId")))
        place = self._places.get(key)
        gateway = self._gateway()
        if place is None or gateway is None:
            return  # (another gateway's task, or one this process did not create)
        front, session = place
        if params.get("status") in _TERMINAL:
            del self._places[key]
        task = {k: v for k, v in params.items() if k != "_meta"}
        task["taskId"] = front
        gateway.bus.publish(ChangeEvent(TASK_STATUS, front, task, session))


_relays: weakref.WeakKeyDictionary[GatewayServer, _StatusRelay] = weakref.WeakKeyDictionary()


def _relay_of(gateway: GatewayServer) -> _StatusRelay:
    relay = _relays.get(gateway)
    if relay is None:
        relay = _relays[gateway] = _StatusRelay(gateway)
    return relay


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
