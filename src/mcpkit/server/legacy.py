"""Re-export: legacy session semantics live in :mod:`mcpkit.runtime.legacy_session`."""

from ..runtime.legacy_session import LegacySession, not_initialized

__all__ = ["LegacySession", "not_initialized"]
