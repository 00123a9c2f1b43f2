"""Error masking (``Server(mask_errors=True)``): no exception text reaches the client.

An unexpected exception in a tool normally becomes an ``isError`` result that quotes the
exception, so the model can correct itself; that text may hold paths, SQL or secrets.
With masking, the client gets a generic message and a correlation id, and the server log
keeps the full traceback under the same id, so an operator can find it from a user's
report.  ``ToolError`` messages (written for the model) and ``McpError`` protocol errors
pass unchanged; any other exception escaping a handler becomes -32603 with the id.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

import anyio

from ...types.errors import INTERNAL_ERROR, McpError
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["ErrorMasking"]

log = logging.getLogger("mcpkit.server.errors")


def correlation_id() -> str:
    return secrets.token_hex(8)


class ErrorMasking(Middleware):
    """Replace unexpected errors' text by a correlation id that the log also records."""

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        try:
            return await call_next(ctx)
        except (McpError, anyio.get_cancelled_exc_class()):
            raise
        except Exception as exc:
            cid = correlation_id()
            log.error("error handling %s [correlation id %s]", ctx.method, cid, exc_info=exc)
            raise McpError(
                INTERNAL_ERROR,
                f"Internal error (correlation id {cid})",
                {"correlationId": cid},
            ) from None

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        result = await call_next(ctx)
        exc = ctx.exception
        if exc is None or not result.get("isError"):
            return result
        cid = correlation_id()
        log.error("tool %r failed [correlation id %s]", ctx.params.get("name"), cid, exc_info=exc)
        text = f"Error executing tool {ctx.params.get('name')} (correlation id {cid})"
        return {
            "content": [{"type": "text", "text": text}],
            "isError": True,
            "_meta": {"io.mcpkit/correlationId": cid},
        }
