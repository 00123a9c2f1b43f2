"""Whether a state store is reachable, as every user of it in this process has seen it.

Each backend object (the server's, the gateway's composed servers', the rate limiter's
own connection) reports what its calls found to the :class:`StoreWatch` of its store
(one per kind and location in the process, so three connections to one Redis make one
watch).  The watch turns those reports into what an operator needs: one warning when the
store stops answering, one line when it answers again, no traceback (an outage is
expected, not a bug).  A store that flaps is reported at most once per
:data:`WARN_EVERY_S`; the lines in between are counted and told with the next one.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

from .base import STATE_UNAVAILABLE, StateUnavailable

log = logging.getLogger("mcpkit.state")

#: At most one "unreachable" warning per store in this many seconds.
WARN_EVERY_S = 30.0

_WATCHES: dict[tuple[str, str], StoreWatch] = {}


class StoreWatch:
    """The reachability of one store (``kind`` at ``where``), shared in the process."""

    __slots__ = ("_quiet", "_warned_at", "down_since", "kind", "where")

    def __init__(self, kind: str, where: str) -> None:
        self.kind = kind
        self.where = where
        #: ``time.monotonic()`` when the store stopped answering; None while it answers.
        self.down_since: float | None = None
        self._warned_at = -WARN_EVERY_S
        self._quiet = 0  # outages not warned of since the last warning

    def failed(self, error: BaseException) -> StateUnavailable:
        """Note that a call could not reach the store; the error to raise instead."""
        if self.down_since is None:
            self.down_since = time.monotonic()
            self._warn(error)
        return StateUnavailable(self.kind)

    def answered(self) -> None:
        """Note that a call reached the store (cheap: a test on every successful call)."""
        if self.down_since is None:
            return
        outage = time.monotonic() - self.down_since
        self.down_since = None
        log.warning(
            "state store %s at %s is reachable again after %.0f s", self.kind, self.where, outage
        )

    def _warn(self, error: BaseException) -> None:
        now = time.monotonic()
        if now - self._warned_at < WARN_EVERY_S:
            self._quiet += 1
            return
        also = f" ({self._quiet} more outages since the last warning)" if self._quiet else ""
        self._warned_at, self._quiet = now, 0
        log.warning(
            "state store %s at %s is unreachable (%s): requests that need it are refused "
            "with %d (HTTP 503) until it answers again%s",
            self.kind,
            self.where,
            _reason(error),
            STATE_UNAVAILABLE,
            also,
        )


def watch(kind: str, url: str) -> StoreWatch:
    """The process's watch of the store at ``url`` (its password left out of the name)."""
    where = _location(url)
    found = _WATCHES.get((kind, where))
    if found is None:
        found = _WATCHES[(kind, where)] = StoreWatch(kind, where)
    return found


def _location(url: str) -> str:
    """``host:port/db`` of a network URL (no user or password), or the path of a file."""
    parts = urlsplit(url)
    if parts.hostname is None:
        return parts.path or url
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.hostname}{port}{parts.path}"


def _reason(error: BaseException) -> str:
    """One line naming what went wrong (the exception's type and first line)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
