"""Per-tool timeouts: ``@server.tool(timeout=5.0)``.

A call still running after its tool's timeout is cancelled and answers with an
``isError`` result saying so (a tool that takes too long is a tool failure the model
can react to, not a protocol error).  The server adds this middleware itself the first
time a tool is registered with a timeout; it wraps only ``tools/call``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["ToolTimeout"]


class ToolTimeout(Middleware):
    """Cancel a tool call after the tool's ``timeout`` (or ``default`` seconds)."""

    def __init__(self, default: float | None = None) -> None:
        self.default = default

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        name = ctx.params.get("name")
        tool = ctx.server.tools.get(name) if isinstance(name, str) else None
        seconds = getattr(tool, "timeout", None) or self.default
        if seconds is None:
            return await call_next(ctx)
        with anyio.move_on_after(seconds):
            return await call_next(ctx)
        # Reached only when the deadline cancelled the call.
        text = f"Tool {name} timed out after {seconds:g} s and was cancelled"
        return {"content": [{"type": "text", "text": text}], "isError": True}
