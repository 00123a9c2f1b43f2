"""Change events (list_changed, resource updated) and their fan-out to listeners.

Listeners are modern ``subscriptions/listen`` streams and legacy sessions.  Publishing is
synchronous and never blocks the publisher: each listener has a bounded buffer and a slow
listener loses events (a list_changed is idempotent; the client re-lists) rather than
stalling the server.  A state backend can relay events between replicas (see
:meth:`ChangeBus.add_relay`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

TOOLS = "tools"
PROMPTS = "prompts"
RESOURCES = "resources"
RESOURCE_UPDATED = "resource"


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    kind: str  # tools | prompts | resources | resource | task
    uri: str | None = None
    #: Extra data (the DetailedTask for task events).
    payload: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "uri": self.uri, "payload": self.payload}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChangeEvent:
        return cls(str(data["kind"]), data.get("uri"), data.get("payload"))


class Listener:
    """One subscriber's buffered view of the bus."""

    __slots__ = ("_bus", "_recv", "_send")

    def __init__(self, bus: ChangeBus, buffer: int) -> None:
        send: ObjectSendStream[ChangeEvent]
        recv: ObjectReceiveStream[ChangeEvent]
        send, recv = anyio.create_memory_object_stream(buffer)
        self._send, self._recv = send, recv
        self._bus = bus

    def offer(self, event: ChangeEvent) -> None:
        with contextlib.suppress(
            anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError
        ):
            self._send.send_nowait(event)

    async def next(self) -> ChangeEvent:
        return await self._recv.receive()

    def close(self) -> None:
        self._bus._listeners.discard(self)
        self._send.close()
        self._recv.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ChangeBus:
    __slots__ = ("_listeners", "_relays")

    def __init__(self) -> None:
        self._listeners: set[Listener] = set()
        self._relays: list[Callable[[ChangeEvent], None]] = []

    def listen(self, buffer: int = 64) -> Listener:
        listener = Listener(self, buffer)
        self._listeners.add(listener)
        return listener

    def publish(self, event: ChangeEvent, *, relay: bool = True) -> None:
        """Deliver to local listeners and (unless it came from a relay) to other replicas."""
        for listener in tuple(self._listeners):
            listener.offer(event)
        if relay:
            for forward in self._relays:
                forward(event)

    def add_relay(self, forward: Callable[[ChangeEvent], None]) -> None:
        self._relays.append(forward)

    @property
    def listener_count(self) -> int:
        return len(self._listeners)
