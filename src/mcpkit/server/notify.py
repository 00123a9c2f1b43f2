"""Re-export: change events and their fan-out live in :mod:`mcpkit.runtime.changes`."""

from ..runtime.changes import (
    PROMPTS,
    RESOURCE_UPDATED,
    RESOURCES,
    TOOLS,
    ChangeBus,
    ChangeEvent,
    Listener,
)

__all__ = [
    "PROMPTS",
    "RESOURCES",
    "RESOURCE_UPDATED",
    "TOOLS",
    "ChangeBus",
    "ChangeEvent",
    "Listener",
]
