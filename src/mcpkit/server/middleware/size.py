"""Response size limit: a result larger than the limit is not sent.

A tool that returns a whole file or table can produce answers bigger than a client or
model context can take.  The size is that of the encoded JSON (the bytes that would go
on the wire).  An oversized tool result becomes an ``isError`` result the model can act on
(ask for less); any other oversized result becomes -32603.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...types.codec import encode
from ...types.errors import INTERNAL_ERROR, McpError
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["ResponseSizeLimit"]


class ResponseSizeLimit(Middleware):
    """Refuse results whose JSON exceeds ``max_bytes``."""

    def __init__(self, max_bytes: int = 1_000_000) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        result = await call_next(ctx)
        size = len(encode(result))
        if size <= self.max_bytes:
            return result
        text = f"Response too large: {size} bytes (limit {self.max_bytes})"
        if ctx.method == "tools/call":
            return {"content": [{"type": "text", "text": text}], "isError": True}
        raise McpError(INTERNAL_ERROR, text, {"size": size, "limit": self.max_bytes})
