"""Audit log: one JSON line per request that reached the policy layer.

Fields: time (ISO 8601 UTC), principal, method, name (of ``tasks/*``: a hash of the
task id, never the id), upstream, outcome (``ok``, ``error:<code>``, ``denied``,
``rule_error`` (refused because a rule's condition could not be evaluated),
``rate_limited:<rule>``, ``state_unavailable``, ``credentials_withheld``,
``unauthenticated``, ``cancelled``
when the client went away before the answer), latency_ms.
Lines are written through a small buffer and flushed every line, so a crash loses nothing
that was logged; the file is opened in append mode so several processes may share it.
"""

from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime
from typing import IO

from ..types.codec import encode
from .binding import audit_name


class AuditLog:
    def __init__(self, path: str | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None
        if path == "-":
            self._file = sys.stderr.buffer
        elif path:
            self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as we do
        #: Whether lines are written (callers skip gathering a line's fields if not; an
        #: attribute, not a property: asked on every request).
        self.enabled = self._file is not None

    def record(
        self,
        *,
        principal: str | None,
        method: str | None,
        name: str | None,
        upstream: str | None,
        outcome: str,
        latency_ms: float,
        **extra: object,
    ) -> None:
        if self._file is None:
            return
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "principal": principal,
            "method": method,
            "name": audit_name(method, name),
            "upstream": upstream,
            "outcome": outcome,
            "latency_ms": round(latency_ms, 3),
            **extra,
        }
        line = encode(entry) + b"\n"
        with self._lock:
            self._file.write(line)

    def close(self) -> None:
        if self._file is not None and self._file is not sys.stderr.buffer:
            self._file.close()
        self._file = None
        self.enabled = False
