"""A task's stored record: its fields, wire forms and the small changes made to it.

A record lives in the state backend under ``task:<id>`` (see :mod:`.tasks`); these
helpers only read or change one record in hand, never the backend.  ``TERMINAL`` names
the statuses a task never leaves; ``public`` and ``detailed`` give the Task and
DetailedTask wire forms (2026-07-28 names: :mod:`.task_eras` renames for 2025-11-25).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..runtime.listen import owner_key, session_key

if TYPE_CHECKING:
    from .context import Context

#: The statuses a task never leaves.
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The Task fields of a record, in wire order (the rest is the server's own).
PUBLIC_FIELDS = (
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttlMs",
    "pollIntervalMs",
)


def now_iso() -> str:
    """Now, as the Task timestamps write it (UTC, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def public(record: dict[str, Any]) -> dict[str, Any]:
    """The Task fields of a stored record (2026-07-28 names)."""
    return {k: record[k] for k in PUBLIC_FIELDS if k in record}


def status_address(ctx: Context) -> dict[str, str]:
    """The record entry naming where a task's status notifications go: the 2025-11-25
    session that created it (a 2026-07-28 client follows a task on a listen stream)."""
    if ctx.meta.era != "legacy" or ctx.session is None:
        return {}
    return {"session": session_key(ctx.session.id)}


def status_of(record: dict[str, Any]) -> tuple[object, object]:
    """What a status notification reports: a change of either sends one."""
    return record.get("status"), record.get("statusMessage")


def requested_ttl(params: dict[str, Any]) -> int | None:
    """The retention a 2025-11-25 ``task`` parameter asks for (None: the server's)."""
    task = params.get("task")
    ttl = task.get("ttl") if isinstance(task, dict) else None
    return ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 else None


def detailed(record: dict[str, Any]) -> dict[str, Any]:
    """The DetailedTask wire form of a stored record."""
    out = public(record)
    status = record["status"]
    if status == "input_required" and record.get("inputRequests"):
        out["inputRequests"] = record["inputRequests"]
    elif status == "completed" and "result" in record:
        out["result"] = record["result"]
    elif status == "failed" and "error" in record:
        out["error"] = record["error"]
    return out


def renew_lease(record: dict[str, Any], lease_s: float, runner: str | None = None) -> None:
    """Extend the lease ``lease_s`` from now, unless another worker than ``runner``
    took the task meanwhile (None: run in-process)."""
    if runner is None or record.get("runner") == runner:
        record["lease"] = time.time() + lease_s


def request_cancel(record: dict[str, Any]) -> None:
    """Ask the running tool to stop; a queued task no worker took yet just ends."""
    if "queued" in record and "runner" not in record:
        record["status"] = "cancelled"
        record.pop("statusMessage", None)
    else:
        record["cancelRequested"] = True


def owner_of(principal: object) -> str:
    """The key a record binds its caller by (only that caller may read it)."""
    return owner_key(principal)
