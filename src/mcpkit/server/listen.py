"""Re-export: ``subscriptions/listen`` filtering lives in :mod:`mcpkit.runtime.listen`."""

from ..runtime.listen import Subscription, legacy_notification_for

__all__ = ["Subscription", "legacy_notification_for"]
