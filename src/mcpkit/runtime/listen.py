"""``subscriptions/listen`` (2026-07-28): which notifications a listen stream gets.

The transport keeps the stream open; this module decides the honoured filter (only what
the server can deliver), builds the acknowledgement that must come first, and maps each
change event to the notification for this subscription (or to nothing when the client
did not opt in).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..types.errors import invalid_params
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


class Subscription:
    """One listen request's honoured filter."""

    __slots__ = ("filter", "kinds", "listen_id", "resources", "task_ids")

    def __init__(
        self, server: CapabilitySource, listen_id: RequestId, params: dict[str, Any]
    ) -> None:
        requested = params.get("notifications")
        if requested is None:
            requested = {}
        if not isinstance(requested, dict):
            raise invalid_params("subscriptions/listen requires a notifications filter object")
        caps = server.capabilities("modern")
        honoured: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        for flag, (kind, method) in _FLAGS.items():
            cap = caps.get(kind, {})
            if requested.get(flag) is True and cap.get("listChanged"):
                honoured[flag] = True
                self.kinds[kind] = method
        uris = requested.get("resourceSubscriptions")
        self.resources: set[str] = set()
        if isinstance(uris, list) and caps.get("resources", {}).get("subscribe"):
            clean = [u for u in uris if isinstance(u, str)]
            honoured["resourceSubscriptions"] = clean
            self.resources = set(clean)
        task_ids = requested.get("taskIds")
        self.task_ids: set[str] = set()
        # The extension as advertised: declared by hand or derived from task tools.
        tasks_on = TASKS_EXTENSION in caps.get("extensions", {})
        if isinstance(task_ids, list) and tasks_on:
            clean_ids = [t for t in task_ids if isinstance(t, str)]
            honoured["taskIds"] = clean_ids
            self.task_ids = set(clean_ids)
        self.filter = honoured
        self.listen_id = listen_id

    def _meta(self) -> dict[str, Any]:
        return {META_SUBSCRIPTION_ID: self.listen_id}

    def acknowledgement(self) -> Message:
        return {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": self.filter, "_meta": self._meta()},
        }

    def notification_for(self, event: ChangeEvent) -> Message | None:
        if event.kind == "task":
            if event.uri is None or event.uri not in self.task_ids or event.payload is None:
                return None
            return {
                "jsonrpc": "2.0",
                "method": "notifications/tasks",
                "params": {**event.payload, "_meta": self._meta()},
            }
        if event.kind == RESOURCE_UPDATED:
            if event.uri is None or event.uri not in self.resources:
                return None
            return {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": event.uri, "_meta": self._meta()},
            }
        method = self.kinds.get(event.kind)
        if method is None:
            return None
        return {"jsonrpc": "2.0", "method": method, "params": {"_meta": self._meta()}}

    def final_result(self) -> dict[str, Any]:
        """The graceful end of a listen stream."""
        return {"resultType": "complete", "_meta": self._meta()}


def legacy_notification_for(event: ChangeEvent, subscribed: set[str]) -> Message | None:
    """The 2025-11-25 notification for a change event on a session's GET stream."""
    if event.kind == "task":
        return None
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
