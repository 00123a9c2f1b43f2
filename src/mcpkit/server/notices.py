"""What a server tells listening clients when its lists change, and the lists it keeps.

Mixed into :class:`~mcpkit.server.Server`: each registration change drops the cached list of
its kind (:meth:`ChangeNotices.cached_list`) and publishes a change event on the server's
:class:`~mcpkit.runtime.changes.ChangeBus`, which reaches listen streams and legacy sessions
on this replica and, through the state backend's relay, on the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..runtime.changes import PROMPTS, RESOURCE_UPDATED, RESOURCES, TOOLS, ChangeBus, ChangeEvent

__all__ = ["ChangeNotices"]


class ChangeNotices:
    """List-changed and resource-updated notices, and the per-kind list cache."""

    bus: ChangeBus
    _list_cache: dict[str, list[Any]]

    def _changed(self, kind: str) -> None:
        self._list_cache.pop(kind, None)
        if kind == RESOURCES:
            self._list_cache.pop("templates", None)
        self.bus.publish(ChangeEvent(kind))

    def notify_tools_changed(self) -> None:
        """Tell listening clients, on every replica, that the tool list changed."""
        self._changed(TOOLS)

    def notify_prompts_changed(self) -> None:
        """Tell listening clients the prompt list changed."""
        self._changed(PROMPTS)

    def notify_resources_changed(self) -> None:
        """Tell listening clients the resource list changed."""
        self._changed(RESOURCES)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed."""
        self.bus.publish(ChangeEvent(RESOURCE_UPDATED, uri))

    def cached_list(self, kind: str, build: Callable[[], list[dict[str, Any]]]) -> list[Any]:
        """The list of ``kind`` built once by ``build`` and kept until a registration changes it."""
        items = self._list_cache.get(kind)
        if items is None:
            items = self._list_cache[kind] = build()
        return items
