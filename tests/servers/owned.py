"""An upstream whose objects belong to someone: tasks that run until released, handles
(boxes holding a secret), resources and an MCP App view, and a tool that registers a
resource at run time (a later claimant of a URI).

Configured through the environment, so one file serves several upstreams::

    OWNED_NAME=alpha mcpkit serve tests/servers/owned.py --http --port 9001
"""

from __future__ import annotations

import os

import anyio

from mcpkit import Context, Server

NAME = os.environ.get("OWNED_NAME", "owned")
VIEW = f"ui://{NAME}/view"

server = Server(f"owned-{NAME}", "1.0.0")
_gates: dict[str, anyio.Event] = {}


def _gate(key: str) -> anyio.Event:
    return _gates.setdefault(key, anyio.Event())


@server.tool(task="optional")
async def hold(key: str) -> str:
    """Finish (as a task, when the client can) once ``release(key)`` is called."""
    await _gate(key).wait()
    return f"{NAME} finished {key}"


@server.tool
def release(key: str) -> str:
    """Let ``hold(key)`` finish."""
    _gate(key).set()
    return "released"


@server.tool
async def open_box(secret: str, ctx: Context) -> str:
    """A handle on a box holding ``secret``."""
    return await ctx.handles.mint("box", secret)


@server.tool
async def read_box(handle: str, ctx: Context) -> str:
    """What the box of ``handle`` holds."""
    return str(await ctx.handles.get(handle, "box"))


_ASK = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


@server.tool
async def two_words(ctx: Context) -> str:
    """Ask for two words, one round each (the first answer travels in requestState)."""
    first = await ctx.elicit("first word?", _ASK)
    second = await ctx.elicit("second word?", _ASK)
    return f"{first['content']['word']} {second['content']['word']}"


@server.prompt
async def two_words_prompt(ctx: Context) -> str:
    """The prompt twin of ``two_words``."""
    return await two_words(ctx)


@server.tool
def claim(uri: str) -> str:
    """Register ``uri`` as a resource of this upstream now (its listeners hear of it)."""

    def read() -> str:
        return f"{NAME} serves {uri}"

    server.resource(uri, name=f"claimed-{len(server.resources)}")(read)
    return f"claimed {uri}"


@server.tool(meta={"ui": {"resourceUri": VIEW}})
def show() -> str:
    """A tool with an MCP App view."""
    return f"shown by {NAME}"


@server.resource(VIEW, name="view", mime_type="text/html;profile=mcp-app")
def view() -> str:
    return f"<html><body>view of {NAME}</body></html>"


@server.resource(f"secret://{NAME}", name="vault", mime_type="text/plain")
def vault() -> str:
    return f"vault of {NAME}"
