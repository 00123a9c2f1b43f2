"""State that must outlive a request: tasks, handles, sealing keys, change fan-out.

One small interface (:class:`StateBackend`), three implementations chosen by URL:
``memory:`` (tests, one process), ``sqlite:///path.db`` (the embedded default; several
processes on one machine share the file) and ``redis://host:port/db`` (many replicas).
"""

from .base import STATE_UNAVAILABLE, StateBackend, StateUnavailable, open_backend

__all__ = ["STATE_UNAVAILABLE", "StateBackend", "StateUnavailable", "open_backend"]
