"""Request correlation, sans-IO: which ids are in flight each way, and what answers what.

Outgoing: :class:`Outgoing` mints ids (never reused while in flight), remembers a waiter per
id and resolves it from a response; a response for an id we never sent (or already
finished, e.g. after a cancellation) is reported as stray, never delivered to the wrong
caller.  Progress tokens map back to their request so progress can extend a timeout.

Incoming: :class:`Incoming` tracks the requests being handled so ``notifications/cancelled``
can find the right one, and refuses a duplicate id while the first is still running.
"""

from __future__ import annotations

import itertools
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..types.jsonrpc import Message, RequestId

W = TypeVar("W")
H = TypeVar("H")

#: Where the ids of requests sent from this context go, while a caller wants them: a
#: client's CLIENT span sets a list around one request to learn the ``jsonrpc.request.id``
#: its transport chose (each transport mints its own ids).  Unset, it costs one lookup.
SENT_IDS: ContextVar[list[RequestId] | None] = ContextVar("mcpkit_sent_ids", default=None)


def note_sent(request_id: RequestId) -> None:
    """Record ``request_id`` for the caller collecting :data:`SENT_IDS`, if any."""
    sink = SENT_IDS.get()
    if sink is not None:
        sink.append(request_id)


@dataclass(slots=True)
class Pending(Generic[W]):
    request_id: RequestId
    method: str
    waiter: W
    progress_token: str | int | None = None


class Outgoing(Generic[W]):
    __slots__ = ("_by_token", "_counter", "_pending")

    def __init__(self, start: int = 1) -> None:
        self._counter = itertools.count(start)
        self._pending: dict[RequestId, Pending[W]] = {}
        self._by_token: dict[str | int, RequestId] = {}

    def next_id(self) -> int:
        while True:
            candidate = next(self._counter)
            if candidate not in self._pending:
                return candidate

    def register(
        self, request_id: RequestId, method: str, waiter: W, progress_token: str | int | None = None
    ) -> Pending[W]:
        if request_id in self._pending:
            raise ValueError(f"request id {request_id!r} is already in flight")
        pending = Pending(request_id, method, waiter, progress_token)
        self._pending[request_id] = pending
        note_sent(request_id)
        if progress_token is not None:
            self._by_token[progress_token] = request_id
        return pending

    def resolve(self, response: Message) -> Pending[W] | None:
        """The pending request a response answers (removed), or None for a stray response."""
        request_id: Any = response.get("id")
        if not _is_id(request_id):
            return None  # absent, bool, or a JSON object/array: answers nothing of ours
        pending = self._pending.pop(request_id, None)
        if pending is not None and pending.progress_token is not None:
            self._by_token.pop(pending.progress_token, None)
        return pending

    def forget(self, request_id: RequestId) -> Pending[W] | None:
        """Drop a request (timed out / cancelled): a late answer becomes stray."""
        pending = self._pending.pop(request_id, None)
        if pending is not None and pending.progress_token is not None:
            self._by_token.pop(pending.progress_token, None)
        return pending

    def for_progress(self, token: Any) -> Pending[W] | None:
        if not _is_id(token):
            return None
        request_id = self._by_token.get(token)
        return self._pending.get(request_id) if request_id is not None else None

    def pending(self) -> list[Pending[W]]:
        """Everything in flight now (a snapshot)."""
        return list(self._pending.values())

    def drain(self) -> list[Pending[W]]:
        """Everything still pending (the connection died): the caller fails them all."""
        items = list(self._pending.values())
        self._pending.clear()
        self._by_token.clear()
        return items

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._pending


class Incoming(Generic[H]):
    """Requests from the peer that we are handling now, keyed by id."""

    __slots__ = ("_active",)

    def __init__(self) -> None:
        self._active: dict[RequestId, H] = {}

    def start(self, request_id: RequestId, handle: H) -> bool:
        """Register; False when the id is already being handled (a duplicate)."""
        if request_id in self._active:
            return False
        self._active[request_id] = handle
        return True

    def finish(self, request_id: RequestId) -> None:
        self._active.pop(request_id, None)

    def get(self, request_id: Any) -> H | None:
        if not _is_id(request_id):
            return None
        return self._active.get(request_id)

    def all(self) -> list[H]:
        return list(self._active.values())

    def __len__(self) -> int:
        return len(self._active)


def progress_token_of(params: dict[str, Any] | None) -> Any:
    """The ``_meta.progressToken`` a request carries (None: it asked for no progress)."""
    meta = params.get("_meta") if params is not None else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


def cancelled_request_id(params: dict[str, Any]) -> RequestId | None:
    """The id named by ``notifications/cancelled`` params, if valid."""
    value = params.get("requestId")
    if (isinstance(value, (str, int))) and not isinstance(value, bool):
        return value
    return None


def _is_id(value: object) -> bool:
    """A usable id or progress token: a string or an integer (never a bool, a float, or an
    unhashable JSON object/array, which a hostile peer may send)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)
