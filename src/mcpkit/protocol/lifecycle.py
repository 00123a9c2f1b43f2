"""The legacy (<= 2025-11-25) session lifecycle as a state table.

Rules, from the 2025-11-25 lifecycle text:

* A session starts NEW.  The only request allowed is ``initialize`` (and ``ping``); anything
  else is refused with -32600 ("session not initialized").
* ``initialize`` answered -> INITIALIZING.  The client must now send
  ``notifications/initialized``; requests that arrive first are tolerated (many clients
  pipeline them) so the state moves on to READY on the first normal request too.
* ``notifications/initialized`` -> READY.  A second ``initialize`` is refused (-32600).
* Closing (DELETE, stdin EOF, expiry) -> CLOSED; everything is refused.

The table maps (state, event) to the next state; a missing pair is a protocol violation.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from ..types.errors import INVALID_REQUEST, McpError


class SessionState(Enum):
    # Members are singletons: identity hashing is exact, and C-fast (Enum's own __hash__
    # is Python code, paid several times per legacy request by the table lookups).
    __hash__ = object.__hash__

    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    CLOSED = "closed"


class Event(Enum):
    __hash__ = object.__hash__  # as SessionState

    INITIALIZE = "initialize"
    INITIALIZED = "initialized"
    PING = "ping"
    REQUEST = "request"
    NOTIFICATION = "notification"
    CLOSE = "close"


S, E = SessionState, Event

TRANSITIONS: Final[dict[tuple[SessionState, Event], SessionState]] = {
    (S.NEW, E.INITIALIZE): S.INITIALIZING,
    (S.NEW, E.PING): S.NEW,
    (S.NEW, E.CLOSE): S.CLOSED,
    (S.INITIALIZING, E.INITIALIZED): S.READY,
    (S.INITIALIZING, E.PING): S.INITIALIZING,
    (S.INITIALIZING, E.REQUEST): S.READY,
    (S.INITIALIZING, E.NOTIFICATION): S.INITIALIZING,
    (S.INITIALIZING, E.CLOSE): S.CLOSED,
    (S.READY, E.INITIALIZED): S.READY,
    (S.READY, E.PING): S.READY,
    (S.READY, E.REQUEST): S.READY,
    (S.READY, E.NOTIFICATION): S.READY,
    (S.READY, E.CLOSE): S.CLOSED,
    (S.CLOSED, E.CLOSE): S.CLOSED,
}


#: The methods that are lifecycle events of their own; any other is a plain request or
#: notification.
_METHOD_EVENTS = {
    "initialize": Event.INITIALIZE,
    "notifications/initialized": Event.INITIALIZED,
    "ping": Event.PING,
}
LIFECYCLE_METHODS = frozenset(_METHOD_EVENTS)


def event_for(method: str, is_request: bool) -> Event:
    event = _METHOD_EVENTS.get(method)
    if event is not None:
        return event
    return Event.REQUEST if is_request else Event.NOTIFICATION


class Lifecycle:
    """Tracks one legacy session's state; :meth:`advance` raises on an illegal event."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = SessionState.NEW

    def advance(self, event: Event) -> SessionState:
        nxt = TRANSITIONS.get((self.state, event))
        if nxt is None:
            raise McpError(INVALID_REQUEST, _refusal(self.state, event))
        self.state = nxt
        return nxt

    def can(self, event: Event) -> bool:
        return (self.state, event) in TRANSITIONS


def _refusal(state: SessionState, event: Event) -> str:
    if state is SessionState.NEW:
        return "Session not initialized: send initialize first"
    if event is Event.INITIALIZE:
        return "Session already initialized"
    if state is SessionState.CLOSED:
        return "Session closed"
    return f"{event.value} is not allowed while the session is {state.value}"
