"""Timing and logging: one structured log line per request.

Each line is a ``logging`` record on ``mcpkit.server.requests`` whose message is the
summary and whose ``extra`` fields carry the same facts for structured handlers
(``mcp_method``, ``mcp_name``, ``mcp_era``, ``mcp_outcome``, ``mcp_duration_ms``).  The
duration is also available to code that subclasses :meth:`Timing.record`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ...types.errors import McpError
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["Timing"]


class Timing(Middleware):
    """Log each request's method, name, era, outcome and duration."""

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger or logging.getLogger("mcpkit.server.requests")
        self.level = level

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await call_next(ctx)
            outcome = "tool_error" if result.get("isError") else "ok"
            return result
        except McpError as err:
            outcome = f"error {err.code}"
            raise
        finally:
            self.record(ctx, outcome, (time.perf_counter() - started) * 1000)

    def record(self, ctx: Context, outcome: str, duration_ms: float) -> None:
        params = ctx.params
        name = params.get("name", params.get("uri"))
        self.logger.log(
            self.level,
            "%s %s %s %.2fms",
            ctx.method,
            name if isinstance(name, str) else "-",
            outcome,
            duration_ms,
            extra={
                "mcp_method": ctx.method,
                "mcp_name": name if isinstance(name, str) else None,
                "mcp_era": ctx.era,
                "mcp_outcome": outcome,
                "mcp_duration_ms": round(duration_ms, 3),
            },
        )
