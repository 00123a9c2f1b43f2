"""The upstream of the export tests: one tool that logs a warning while its span is current
(so ``--log-format json`` has a line to stamp with the trace and span ids)."""

from __future__ import annotations

import logging

from mcpkit import Server

server = Server("otel-calc", "1.0.0")
log = logging.getLogger("calc")


@server.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    log.warning("adding %d and %d", a, b)
    return a + b
