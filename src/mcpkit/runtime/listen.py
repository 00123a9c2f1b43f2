"""``subscriptions/listen`` (2026-07-28): which notifications a listen stream gets.

The transport keeps the stream open; this module decides the honoured filter (only what
the server can deliver), builds the acknowledgement that must come first, and maps each
change event to the notification for this subscription (or to nothing when the client
did not opt in).

A fan-out renders each event once: every subscription's notification is the same bytes
but for its subscription id, so :meth:`ServedSubscription.encode` splices the id into one
encoding shared by all of them (a legacy notification has no id at all and is the same
bytes for every session: :func:`legacy_encoded`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ..types.codec import encode_message, encode_str
from ..types.errors import object_param
from ..types.jsonrpc import Message, RequestId
from ..types.versions import META_SUBSCRIPTION_ID, TASKS_EXTENSION
from .changes import PROMPTS, RESOURCE_UPDATED, RESOURCES, TOOLS, ChangeEvent

if TYPE_CHECKING:
    from .contracts import CapabilitySource

_FLAGS = {
    "toolsListChanged": (TOOLS, "notifications/tools/list_changed"),
    "promptsListChanged": (PROMPTS, "notifications/prompts/list_changed"),
    "resourcesListChanged": (RESOURCES, "notifications/resources/list_changed"),
}
_METHODS = dict(_FLAGS.values())


#: Stands for the subscription id in the shared encoding of an event's notification.
_ID_MARK = "\u0000mcpkit-subscription-id\u0000"
_ID_MARK_JSON = encode_str(_ID_MARK).encode()
_NOTHING: frozenset[str] = frozenset()


class _Rendered:
    """The last event rendered and its notification's bytes before and after the
    subscription id (``None``: not splittable; each subscription encodes its own)."""

    __slots__ = ("event", "legacy", "parts")

    def __init__(self, event: ChangeEvent | None) -> None:
        self.event = event
        self.parts: tuple[bytes, bytes] | None = None
        self.legacy: bytes | None = None


_last = _Rendered(None)


def _rendered(event: ChangeEvent) -> _Rendered:
    """The shared rendering of ``event`` (one per fan-out: the bus offers the same event
    object to every subscriber in turn).  Swapped whole, so a server in another thread
    sees either the old rendering or the new one, never a mix."""
    global _last
    last = _last
    if last.event is not event:
        last = _Rendered(event)
        note = _modern_note(event, {META_SUBSCRIPTION_ID: _ID_MARK})
        if note is not None:
            try:
                head, mark, tail = encode_message(note).partition(_ID_MARK_JSON)
            except ValueError:  # unencodable payload: nobody gets it
                head, mark, tail = b"", b"", b""
            if mark and _ID_MARK_JSON not in tail:
                last.parts = (head, tail)
        _last = last
    return last


def _modern_note(event: ChangeEvent, meta: dict[str, Any]) -> Message | None:
    """The 2026-07-28 notification for ``event`` (whoever asked for it)."""
    if event.kind == "task":
        if event.payload is None:
            return None
        method = "notifications/tasks"
        params: dict[str, Any] = {**event.payload, "_meta": meta}
    elif event.kind == RESOURCE_UPDATED:
        method = "notifications/resources/updated"
        params = {"uri": event.uri, "_meta": meta}
    else:
        note_method = _METHODS.get(event.kind)
        if note_method is None:
            return None
        method = note_method
        params = {"_meta": meta}
    return {"jsonrpc": "2.0", "method": method, "params": params}


#: A 2025-11-25 task's status change, addressed to the session that created the task
#: (its ``owner`` is :func:`session_key` of that session, its payload the ``Task``).
TASK_STATUS = "task-status"


def session_key(session_id: str) -> str:
    """What a session-addressed event names its session by: a digest of the session id
    (events cross replicas through the state backend; the id itself stays out of them)."""
    return "session:" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


def _for_session(event: ChangeEvent, session_id: str | None) -> bool:
    return session_id is not None and event.owner == session_key(session_id)


def owner_key(principal: object) -> str:
    """The owner a caller's objects (tasks, handles) are recorded under: its principal's
    identity string (``""`` without authentication)."""
    return "" if principal is None else str(principal)


class ServedSubscription:
    """One listen request's honoured filter, as the server serves it (the client's handle
    on a listen is :class:`mcpkit.client.listen.Subscription`).

    ``principal`` is the caller's: a task's events reach only its owner's streams.  A
    ``taskIds`` entry naming another caller's task is acknowledged and never streamed,
    exactly as an unknown id is."""

    __slots__ = ("_id_json", "filter", "kinds", "listen_id", "owner", "resources", "task_ids")

    def __init__(
        self,
        server: CapabilitySource,
        listen_id: RequestId,
        params: dict[str, Any],
        principal: object = None,
    ) -> None:
        self.owner = owner_key(principal)
        requested = object_param(
            params, "notifications", "subscriptions/listen requires a notifications filter object"
        )
        caps = server.capabilities("modern")
        honoured: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        for flag, (kind, method) in _FLAGS.items():
            cap = caps.get(kind, {})
            if requested.get(flag) is True and cap.get("listChanged"):
                honoured[flag] = True
                self.kinds[kind] = method
        uris = requested.get("resourceSubscriptions")
        # Empty filters share one frozenset: most streams ask for list changes only.
        self.resources: frozenset[str] = _NOTHING
        if isinstance(uris, list) and caps.get("resources", {}).get("subscribe"):
            clean = [u for u in uris if isinstance(u, str)]
            honoured["resourceSubscriptions"] = clean
            self.resources = frozenset(clean)
        task_ids = requested.get("taskIds")
        self.task_ids: frozenset[str] = _NOTHING
        # The extension as advertised: declared by hand or derived from task tools.
        tasks_on = TASKS_EXTENSION in caps.get("extensions", {})
        if isinstance(task_ids, list) and tasks_on:
            clean_ids = [t for t in task_ids if isinstance(t, str)]
            honoured["taskIds"] = clean_ids
            self.task_ids = frozenset(clean_ids)
        self.filter = honoured
        self.listen_id = listen_id
        # Through str: orjson's own bytes keep a ~4 KB buffer however short the JSON is,
        # and this one lives as long as the stream.
        self._id_json = encode_str(listen_id).encode()

    def _meta(self) -> dict[str, Any]:
        return {META_SUBSCRIPTION_ID: self.listen_id}

    def acknowledgement(self) -> Message:
        return {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": self.filter, "_meta": self._meta()},
        }

    def wants(self, event: ChangeEvent) -> bool:
        """Whether this subscription asked for ``event``."""
        kind = event.kind
        if kind == "task":
            return event.uri in self.task_ids and event.owner == self.owner
        if kind == RESOURCE_UPDATED:
            return event.uri is not None and event.uri in self.resources
        return kind in self.kinds

    def notification_for(self, event: ChangeEvent) -> Message | None:
        if not self.wants(event):
            return None
        return _modern_note(event, self._meta())

    def encode(self, event: ChangeEvent) -> bytes | None:
        """:meth:`notification_for` encoded (None: not for this subscription, or not
        encodable), from the event's shared rendering."""
        if not self.wants(event):
            return None
        parts = _rendered(event).parts
        if parts is not None:
            return b"".join((parts[0], self._id_json, parts[1]))
        note = _modern_note(event, self._meta())
        if note is None:
            return None
        try:
            return encode_message(note)
        except ValueError:
            return None

    def final_result(self) -> dict[str, Any]:
        """The graceful end of a listen stream."""
        return {"resultType": "complete", "_meta": self._meta()}


def legacy_encoded(
    event: ChangeEvent, subscribed: set[str], session_id: str | None = None
) -> bytes | None:
    """:func:`legacy_notification_for` encoded, the same bytes for every session it is
    for."""
    if event.kind == RESOURCE_UPDATED and event.uri not in subscribed:
        return None
    if event.kind == TASK_STATUS and not _for_session(event, session_id):
        return None
    rendered = _rendered(event)
    data = rendered.legacy
    if data is None:
        note = legacy_notification_for(event, subscribed, session_id)
        if note is None:
            return None
        try:
            data = rendered.legacy = encode_message(note)
        except ValueError:
            return None
    return data


def legacy_notification_for(
    event: ChangeEvent, subscribed: set[str], session_id: str | None = None
) -> Message | None:
    """The 2025-11-25 notification for a change event on the GET stream of the session
    ``session_id`` (a task's status goes to the session that created the task only)."""
    if event.kind == "task":
        return None
    if event.kind == TASK_STATUS:
        if event.payload is None or not _for_session(event, session_id):
            return None
        return {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": event.payload}
    if event.kind == RESOURCE_UPDATED:
        if event.uri in subscribed:
            return {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": event.uri},
            }
        return None
    for kind, method in _FLAGS.values():
        if kind == event.kind:
            return {"jsonrpc": "2.0", "method": method}
    return None
