"""Callers bound to what the gateway hands out: task ids and handles.

An upstream sees the gateway's identity for every front caller, so its own owner checks
cannot tell alice from bob.  The gateway binds what it hands out itself:

* **Task ids.**  The id a front caller gets (for a task an upstream started) is the
  upstream's id sealed with the server's keyring (:mod:`mcpkit.protocol.sealing`) for
  that caller: ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` open it with the
  caller's identity, and an id that does not open (another caller's, tampered, made up)
  is answered exactly as an unknown one: ``-32602 Unknown task: <id>`` with
  ``{"taskId": <id>}``.  An upstream's own "unknown task" answer is given in the same
  words, so nothing tells a foreign id from a missing one.  The ids carry nothing of the
  upstream's id in the clear, and gateways sharing the keyring (``MCPKIT_SEALING_KEYS``)
  accept each other's.
* **Handles** (mcpkit's ``kind_<32 characters>``, :mod:`mcpkit.server.handles`).  A
  handle seen in a tool result is recorded, in the gateway's state backend, as its
  caller's (the first caller it reached keeps it).  A call naming a handle recorded as
  another caller's reaches the upstream with a handle that never existed in its place, and
  the answer names the original again: the caller gets the upstream's own answer for an
  unknown handle, word for word.  Handles of other shapes are the upstream's to check.

* **Request state** of an upstream's input request (MRTR), passed through: the gateway
  seals it again for the caller it was handed to, and opens it on the retry.  A state that
  does not open with the caller's identity (another caller's, tampered) goes on as it
  is, and is refused as any tampered state is.

Audit lines name a task by a hash of its front id (:func:`audit_name`), never the id.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..protocol.sealing import InvalidState, Keyring
from ..runtime.listen import owner_key
from ..state.base import StateBackend
from ..types.codec import decode, encode
from ..types.errors import INVALID_PARAMS, McpError, invalid_params

__all__ = ["Bindings", "audit_name", "unknown_task"]

#: What a front task id is sealed for (with the caller's identity).
_TASK_BINDING = "mcpkit-gateway-task\0"
#: What an upstream's request state is sealed for (with the caller's identity).
_STATE_BINDING = "mcpkit-gateway-state\0"
#: How long a front task id opens: longer than any upstream keeps a task.
_TASK_ID_TTL_S = 30 * 24 * 3600.0
#: An mcpkit handle (``Handles.mint``): a short kind, ``_``, 192 random bits.
_HANDLE = re.compile(r"(?<![A-Za-z0-9_-])[a-z][a-z0-9]{0,15}_[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")
#: The shortest string that can hold a handle (a one-letter kind, ``_``, 32 characters):
#: a string shorter than this, or without ``_``, is not searched.
_HANDLE_MIN = 34
#: How long the gateway remembers who a handle belongs to, from when it was handed out.
_HANDLE_TTL_S = 7 * 24 * 3600.0
_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel", "tasks/result"})
#: The newest tasks of one caller that the caller's task index keeps (``tasks/list``).
LISTED_TASKS = 1000


def unknown_task(task_id: object) -> McpError:
    """The one answer for a task id the caller does not own or that does not exist."""
    return invalid_params(f"Unknown task: {task_id}", {"taskId": task_id})


def audit_name(method: str | None, name: str | None) -> str | None:
    """The audit log's ``name`` of a request: a task id only as a hash of it."""
    if name is None or method is None or method not in _TASK_METHODS:
        return name
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()[:16]


class Bindings:
    """The gateway's bindings of task ids and handles to the callers who created them."""

    __slots__ = ("_keyring", "_state")

    def __init__(self, keyring: Keyring, state: StateBackend) -> None:
        self._keyring = keyring
        self._state = state

    async def call(
        self,
        who: object,
        params: dict[str, Any],
        forward: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """A ``tools/call`` (``prompts/get``, ``resources/read``: the same, for what
        they carry) of ``who`` forwarded (``forward(params)``) with its bindings:
        another caller's handles in its arguments are swapped for ones that never existed
        (the upstream answers as for any unknown handle) and named again in the answer, a
        resumed request state is opened for ``who``; the handles, the task id and the
        request state of the answer become ``who``'s.  Every path that forwards a call
        (the server's, a direct one) goes through here."""
        swaps = None
        if handles_in(params.get("arguments")):
            swaps = await self.foreign_handles(who, params.get("arguments"))
        if swaps:
            params = {**params, "arguments": swapped(params["arguments"], swaps)}
        if "requestState" in params:
            params = self.open_state(who, params)
        result = await forward(params)
        if swaps:
            result = swapped(result, {new: old for old, new in swaps.items()})
        found = result_handles(result)
        if found:
            await self._record(who, found)
        return self.sealed(who, result)

    async def _record(self, who: object, found: set[str]) -> None:
        owner = owner_key(who).encode()
        for handle in found:
            await self._state.add(self._handle_key(handle), owner, _HANDLE_TTL_S)

    def sealed(self, who: object, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` with its request state and task id sealed for ``who``."""
        if "requestState" in result:
            return self.seal_state(who, result)
        return self.seal_task(who, result) if "taskId" in result else result

    # ------------------------------------------------------------------ task ids
    def seal_task(self, who: object, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` with its ``taskId`` (an upstream's, routable) as ``who``'s front id."""
        task_id = result.get("taskId")
        if not isinstance(task_id, str):
            return result
        front = self._keyring.seal({"t": task_id}, _TASK_BINDING + owner_key(who), _TASK_ID_TTL_S)
        return {**result, "taskId": front}

    def open_task(self, who: object, front: object) -> str:
        """The routable id behind ``who``'s front task id; :func:`unknown_task` for an id
        that is not ``who``'s (or not an id at all)."""
        try:
            opened = self._keyring.open(front, _TASK_BINDING + owner_key(who))
        except InvalidState:
            raise unknown_task(front) from None
        inner = opened.get("t")
        if not isinstance(inner, str):
            raise unknown_task(front)
        return inner

    @staticmethod
    def answered_as_front(front: str, result: dict[str, Any]) -> dict[str, Any]:
        """A ``tasks/*`` answer naming the task as the caller does."""
        return {**result, "taskId": front} if "taskId" in result else result

    @staticmethod
    def unknown_as_front(front: str, error: McpError) -> McpError:
        """An upstream's "unknown task" answer in the gateway's words for ``front``."""
        if error.code == INVALID_PARAMS and error.message.startswith("Unknown task"):
            return unknown_task(front)
        return error

    # ------------------------------------------------------------------ per-caller tasks
    def _tasks_key(self, who: object) -> str:
        return "gw-task-list:" + hashlib.sha256(owner_key(who).encode()).hexdigest()

    async def remember_task(self, who: object, front: str) -> None:
        """Add ``who``'s front task id to their index in the state backend (what
        ``tasks/list`` reads, on any replica sharing it); the newest
        :data:`LISTED_TASKS` are kept."""
        await self._state.remember_recent(self._tasks_key(who), front, LISTED_TASKS, _TASK_ID_TTL_S)

    async def tasks_of(self, who: object) -> list[tuple[str, str]]:
        """``who``'s front task ids, oldest first, each with the routable id behind it
        (an id that no longer opens for ``who`` is left out)."""
        ids = await self._state.recent(self._tasks_key(who))
        owned = []
        for front in ids:
            try:
                owned.append((front, self.open_task(who, front)))
            except McpError:
                continue
        return owned

    # ------------------------------------------------------------------ request state
    def seal_state(self, who: object, result: dict[str, Any]) -> dict[str, Any]:
        """An ``InputRequiredResult`` whose ``requestState`` only ``who`` can resume."""
        state = result.get("requestState")
        if not isinstance(state, str):
            return result
        sealed = self._keyring.seal({"s": state}, _STATE_BINDING + owner_key(who))
        return {**result, "requestState": sealed}

    def open_state(self, who: object, params: dict[str, Any]) -> dict[str, Any]:
        """A retry's params with the state sealed for ``who`` opened (anything else is
        left for the upstream to refuse)."""
        try:
            opened = self._keyring.open(params.get("requestState"), _STATE_BINDING + owner_key(who))
        except InvalidState:
            return params
        state = opened.get("s")
        return {**params, "requestState": state} if isinstance(state, str) else params

    # ------------------------------------------------------------------ handles
    def _handle_key(self, handle: str) -> str:
        return "gw-handle:" + hashlib.sha256(handle.encode()).hexdigest()

    async def record_handles(self, who: object, result: dict[str, Any]) -> None:
        """Record the handles a tool result hands ``who`` (the first caller keeps one)."""
        found = result_handles(result)
        if found:
            await self._record(who, found)

    async def foreign_handles(self, who: object, arguments: object) -> dict[str, str]:
        """The handles ``arguments`` name that are recorded as another caller's, each with
        a fresh one of its kind that never existed (to send in its place)."""
        found: set[str] = set()
        _value_handles(arguments, found)
        if not found:
            return {}
        owner = owner_key(who).encode()
        swaps = {}
        for handle in found:
            recorded = await self._state.get(self._handle_key(handle))
            if recorded is not None and recorded != owner:
                kind = handle.partition("_")[0]
                swaps[handle] = f"{kind}_{secrets.token_urlsafe(24)}"
        return swaps


def handles_in(arguments: object) -> bool:
    """Whether ``arguments`` (JSON) hold a string shaped like a handle: only then can a
    call name another caller's handle (:meth:`Bindings.foreign_handles`).  (The strings
    of an object are tested in its own loop: most arguments are a few short strings.)"""
    if type(arguments) is not dict:
        found: set[str] = set()
        _value_handles(arguments, found)
        return bool(found)
    for item in arguments.values():
        if type(item) is str:
            if "_" in item and len(item) >= _HANDLE_MIN and _HANDLE.search(item):
                return True
        elif item is not None and type(item) not in _SCALARS and handles_in(item):
            return True
    return False


def swapped(value: Any, swaps: dict[str, str]) -> Any:
    """``value`` (JSON) with every occurrence of each key of ``swaps`` replaced."""
    if not swaps:
        return value
    text = encode(value).decode()
    for old, new in swaps.items():
        text = text.replace(old, new)
    return decode(text)


def _value_handles(value: object, found: set[str]) -> None:
    """Add the handles every string of a JSON value names to ``found``.  A string is
    searched only when it can hold one (a ``_``, a handle's length).  (Exact JSON types
    are told by ``type`` first, subclasses by ``isinstance``; the strings of a container
    are tested in its own loop: a call per string costs more than the test.)"""
    items: Iterable[object]
    if type(value) is dict or isinstance(value, dict):
        items = value.values()
    elif type(value) is list or isinstance(value, list):
        items = value
    elif isinstance(value, str):
        items = (value,)
    else:
        return
    for item in items:
        if type(item) is str or isinstance(item, str):
            if "_" in item and len(item) >= _HANDLE_MIN:
                found.update(_HANDLE.findall(item))
        elif item is not None and type(item) not in _SCALARS:
            _value_handles(item, found)


#: JSON scalars other than strings: nothing to search in.
_SCALARS = frozenset({bool, int, float})


def result_handles(result: dict[str, Any]) -> set[str]:
    """The handles a tool result hands out (strings shaped like one, to record): in its
    text blocks and its structured content."""
    found: set[str] = set()
    for block in result.get("content") or ():
        if (type(block) is dict or isinstance(block, dict)) and block.get("type") == "text":
            text = block.get("text")
            if (
                (type(text) is str or isinstance(text, str))
                and "_" in text
                and len(text) >= _HANDLE_MIN
            ):
                found.update(_HANDLE.findall(text))
    if "structuredContent" in result:
        _value_handles(result["structuredContent"], found)
    return found
