"""The upstream behind the proxy tests: served as a legacy-only stdio server
(``--no-modern``) or a modern-only HTTP server (``--no-legacy``).  Its answers say what
reached it, so a test can check at the upstream what the proxy forwarded."""

from __future__ import annotations

from typing import Any

from mcpkit import Context, Server

server = Server("upstream", "1.0.0")


@server.tool
def echo(text: str, times: int = 1) -> str:
    """Echo text."""
    return " ".join([text] * times)


@server.tool
def era(ctx: Context) -> str:
    """The era the request reached the upstream in."""
    return ctx.era


@server.tool
async def confirm(action: str, ctx: Context) -> str:
    """Asks the user before acting."""
    answer = await ctx.elicit(
        f"Really {action}?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    )
    return f"{action}: {answer['action']} {answer.get('content')}"


@server.tool
def grow(name: str) -> str:
    """Adds a tool (its list changes)."""

    def added() -> str:
        return f"I am {name}"

    server.tool(added, name=name)
    return "grown"


@server.resource("data://config")
def config() -> str:
    return "upstream-config"


@server.resource("data://items/{item}")
def item(item: str) -> str:
    return f"item:{item}"


@server.prompt
def greet(who: str) -> str:
    return f"Hello {who}"


@server.completion
def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
    return [n for n in ("ada", "alan", "grace") if n.startswith(argument["value"])]


@server.tool
async def slow(steps: int, ctx: Context) -> str:
    """Reports progress at each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return "done"


@server.tool
def die() -> str:
    """Ends the upstream's process at once (the proxy must reconnect)."""
    import os

    os._exit(3)


@server.tool
def touch() -> str:
    """Says data://config changed (to whoever subscribed)."""
    server.notify_resource_updated("data://config")
    return "touched"


@server.tool(task="optional")
async def crunch(n: int) -> str:
    """Runs as a task when the client supports tasks."""
    import anyio

    await anyio.sleep(0.05)
    return f"crunched {n}"


@server.tool(
    input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }
)
def regional(region: str, ctx: Context) -> str:
    """An argument that also travels as the Mcp-Param-Region header over HTTP."""
    return f"region {region}, header {ctx.request.header('Mcp-Param-Region')}"
