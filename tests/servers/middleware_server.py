"""A fixture server whose one middleware writes every event it sees for ``tools/call`` to
``middleware-events.jsonl`` in the working directory, one JSON array per line, so a test
can compare what the hook observed across transports, eras and modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcpkit import Server
from mcpkit.server import CallNext, Context, Middleware

EVENTS = Path("middleware-events.jsonl")


def record(*event: Any) -> None:
    with EVENTS.open("a", encoding="utf-8") as sink:
        sink.write(json.dumps(event) + "\n")


class Recorder(Middleware):
    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        record("on_request", ctx.method)
        result = await call_next(ctx)
        record("on_request done", result.get("resultType", "complete"))
        return result

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        record("on_call_tool", ctx.params["name"], ctx.params.get("arguments", {}).get("text"))
        result = await call_next(ctx)
        if result.get("resultType") == "input_required":
            record("result", "input_required")
        else:
            record("result", result["content"][0]["text"])
        return result

    async def on_notification(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        record("on_notification", ctx.method, ctx.era)
        return await call_next(ctx)


server = Server("middleware-fixture", "0.0.1", middleware=[Recorder()])


@server.tool(task="optional")
async def echo(text: str, ctx: Context, confirm: bool = False) -> str:
    """Echo the text; with ``confirm`` ask the user first (an MRTR round on 2026-07-28)."""
    record("handler", text)
    if confirm:
        answer = await ctx.elicit(
            "Echo it?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        if answer.get("action") != "accept":
            return "declined"
    return f"echo: {text}"


@server.tool(inline=True)
def shout(text: str) -> str:
    """A plain ``def`` tool: with a middleware that never waits it stays on the fast path."""
    record("handler", text)
    return f"echo: {text}"


@server.tool
def whoami(ctx: Context) -> dict[str, Any]:
    """What ``ctx.request`` says about this call."""
    request = ctx.request
    return {
        "tenant": request.header("X-Tenant"),
        "header_count": len(request.headers),
        "era": request.era,
        "version": request.protocol_version,
        "client": (request.client_info or {}).get("name"),
        "caps": sorted(request.client_capabilities),
        "id": request.request_id,
        "method": request.method,
    }
