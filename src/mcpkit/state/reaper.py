"""Deleting expired records (task records, handles, request-state keys, legacy sessions).

Every backend already treats a record past its TTL as absent, but only Redis gives the
space back by itself: SQLite kept every expired row forever (the file only grew) and the
memory backend freed a record only when someone read it again.  :func:`reap_forever` runs
in each server's background task group and deletes them in batches of :data:`BATCH`,
yielding between two, so a request never waits behind more than one short batch
(deleting them all in one statement held SQLite's write lock for as long as the whole
delete took: ``python -m bench --only scale``).
"""

from __future__ import annotations

import logging

import anyio

from .base import StateBackend, StateUnavailable

__all__ = ["BATCH", "EVERY_S", "reap_all", "reap_forever"]

#: Records deleted per statement: small enough that one batch is a short pause.
BATCH = 500
#: Seconds between two sweeps (a sweep ends when a batch comes back short).
EVERY_S = 60.0

log = logging.getLogger("mcpkit.state")


async def reap_all(backend: StateBackend, batch: int = BATCH) -> int:
    """Delete every record expired by now, ``batch`` at a time; how many were deleted."""
    total = 0
    while True:
        deleted = await backend.reap_expired(batch)
        total += deleted
        if deleted < batch:
            return total
        await anyio.sleep(0)  # requests waiting on the store go before the next batch


async def reap_forever(backend: StateBackend, every_s: float = EVERY_S, batch: int = BATCH) -> None:
    """Sweep every ``every_s`` seconds for as long as the server runs; a failed sweep
    (a locked or closed store) is logged and tried again at the next one."""
    while True:
        try:
            await reap_all(backend, batch)
        except StateUnavailable:
            pass  # an outage the store's watch logged once: the next sweep tries again
        except Exception:
            log.warning("reaping expired state failed; retrying later", exc_info=True)
        await anyio.sleep(every_s)
