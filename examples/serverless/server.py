"""The MCP server the serverless examples deploy: one plain tool, one that asks the user.

``confirm_delete`` asks for confirmation with an MRTR round (2026-07-28): the first call
answers ``input_required`` with a sealed ``requestState``, the retry carries the answer and
may land on another function instance; it opens the state because every instance reads the
same ``MCPKIT_SEALING_KEYS`` from its environment.
"""

from __future__ import annotations

from mcpkit import Context, Server

server = Server("serverless-example", "1.0.0")


@server.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool
async def confirm_delete(path: str, ctx: Context) -> str:
    """Delete a file after the user confirms (asks through the client)."""
    answer = await ctx.elicit(
        f"Delete {path}?",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    content = answer.get("content") or {}
    if answer.get("action") == "accept" and content.get("ok"):
        return f"deleted {path}"
    return f"kept {path}"
