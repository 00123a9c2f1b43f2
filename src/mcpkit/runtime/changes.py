"""Change events (list_changed, resource updated) and their fan-out to listeners.

Listeners are modern ``subscriptions/listen`` streams and legacy sessions.  Publishing is
synchronous and never blocks the publisher: each listener has a bounded buffer and a slow
listener loses events (a list_changed is idempotent; the client re-lists) rather than
stalling the server.  A state backend can relay events between replicas (see
:meth:`ChangeBus.add_relay`).

The bus also counts which resource URIs its listeners want updates of (a listen
stream's ``resourceSubscriptions``, a legacy session's ``resources/subscribe``) and tells
:attr:`ChangeBus.on_interest` when a URI gains its first or loses its last interested
listener: a server that relays another server's resources (the gateway) subscribes
upstream only to what someone downstream is watching.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import sniffio
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
    #: Who the event is for (a task event: its task's owner); None: everyone watching.
    owner: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "uri": self.uri, "payload": self.payload, "owner": self.owner}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChangeEvent:
        owner = data.get("owner")
        return cls(
            str(data["kind"]),
            data.get("uri"),
            data.get("payload"),
            owner if isinstance(owner, str) else None,
        )


class Subscriber(Protocol):
    """What the bus delivers to: ``offer`` is called on the event loop, must not block, and
    must not raise (a subscriber that cannot take an event drops it).  An HTTP stream
    writes the event out from ``offer`` itself (see ``transports/http/stream.py``); a
    :class:`Listener` buffers it for a task that awaits :meth:`Listener.next`."""

    resources: tuple[str, ...]

    def offer(self, event: ChangeEvent) -> None: ...


class Listener:
    """One subscriber's buffered view of the bus."""

    __slots__ = ("_bus", "_recv", "_send", "resources")

    def __init__(self, bus: ChangeBus, buffer: int) -> None:
        #: Resource URIs this listener wants updates of (counted by the bus).
        self.resources: tuple[str, ...] = ()
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
        self._bus.detach(self)
        self._send.close()
        self._recv.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ChangeBus:
    __slots__ = ("_interest", "_listeners", "_relays", "on_interest")

    def __init__(self) -> None:
        self._listeners: set[Subscriber] = set()
        self._relays: list[Callable[[ChangeEvent], None]] = []
        self._interest: dict[str, int] = {}
        #: Called with (uri, True) when a resource URI gains its first interested
        #: listener and (uri, False) when it loses its last.
        self.on_interest: Callable[[str, bool], None] | None = None

    def listen(self, buffer: int = 64, resources: Iterable[str] = ()) -> Listener:
        """A listener; ``resources`` are the URIs it wants updates of (held until it
        closes)."""
        listener = Listener(self, buffer)
        self.attach(listener, resources)
        return listener

    def attach(self, subscriber: Subscriber, resources: Iterable[str] = ()) -> None:
        """Deliver every event to ``subscriber`` until :meth:`detach`; ``resources`` are the
        URIs it wants updates of (counted until it is detached)."""
        self._listeners.add(subscriber)
        if resources:
            subscriber.resources = tuple(set(resources))
            self.want(subscriber.resources, True)

    def detach(self, subscriber: Subscriber) -> None:
        """Stop delivering to ``subscriber`` (no-op when it is not attached)."""
        if subscriber in self._listeners:
            self._listeners.discard(subscriber)
            self.want(subscriber.resources, False)

    def want(self, uris: Iterable[str], wanted: bool) -> None:
        """Count interest in resource updates of ``uris`` up (or down)."""
        for uri in uris:
            count = self._interest.get(uri, 0) + (1 if wanted else -1)
            if count > 0:
                self._interest[uri] = count
            else:
                self._interest.pop(uri, None)
            first_or_last = (wanted and count == 1) or (not wanted and count == 0)
            if first_or_last and self.on_interest is not None:
                self.on_interest(uri, wanted)

    def watched(self) -> set[str]:
        """The resource URIs some listener wants updates of."""
        return set(self._interest)

    def publish(self, event: ChangeEvent, *, relay: bool = True) -> None:
        """Deliver to local listeners and (unless it came from a relay) to other replicas.

        Safe from a tool running in a worker thread (plain ``def`` tools do by default):
        the delivery hops back onto the event loop, since listeners' streams belong to it.
        With nobody to deliver to (tools registered before serving) there is nothing to do,
        and a cold start does not pay for importing the thread hop.
        """
        if not self._listeners and not (relay and self._relays):
            return
        try:
            sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:  # not on an event loop
            import anyio.from_thread  # here: ~6 ms of import a cold start need not pay

            try:
                anyio.from_thread.run_sync(self._deliver, event, relay)
                return
            except RuntimeError:  # no loop to hop to (registration before serving)
                pass
        self._deliver(event, relay)

    def _deliver(self, event: ChangeEvent, relay: bool) -> None:
        for listener in tuple(self._listeners):
            listener.offer(event)
        if relay:
            for forward in self._relays:
                forward(event)

    def add_relay(self, forward: Callable[[ChangeEvent], None]) -> None:
        self._relays.append(forward)

    def remove_relay(self, forward: Callable[[ChangeEvent], None]) -> None:
        """Stop calling ``forward`` (a mounted server being unmounted)."""
        if forward in self._relays:
            self._relays.remove(forward)

    @property
    def listener_count(self) -> int:
        return len(self._listeners)
