"""A server that exercises what the command line shows: typed forms, URLs, progress, logs.

Defines the server and ends (as most users' files do); tests reach it as a file target.
"""

from __future__ import annotations

from mcpkit import Context, Server

server = Server("cli-fixture", "2.0.0")

ORDER_FORM = {
    "type": "object",
    "properties": {
        "size": {"type": "string", "title": "Size", "enum": ["small", "large"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
        "gift": {"type": "boolean", "description": "Wrap it?"},
        "colour": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "b", "title": "Blue"}],
        },
        "note": {"type": "string"},
    },
    "required": ["size", "gift", "colour"],
}


@server.tool
async def order(ctx: Context) -> dict[str, object]:
    """Ask for an order with a typed form and echo the answer."""
    answer = await ctx.elicit("Your order?", ORDER_FORM)
    return {"action": answer["action"], "content": answer.get("content")}


@server.tool
async def connect(ctx: Context) -> str:
    """Send the user to a URL."""
    answer = await ctx.elicit_url("Authorize the demo", "https://example.test/authorize?x=1")
    return f"url answer: {answer.action}"


@server.tool
async def work(ctx: Context, steps: int = 3) -> str:
    """Report progress and log at several levels."""
    await ctx.debug("debug detail", logger="fixture")
    await ctx.info("starting work", logger="fixture")
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    await ctx.warning({"done": steps})
    return f"worked {steps} steps"


@server.tool
def shout(text: str, times: int = 1, loud: bool = False) -> str:
    """Typed arguments: a string, an integer and a boolean."""
    out = " ".join([text.upper() if loud else text] * times)
    return out


for index in range(1500):  # enough output that `| head -1` closes the pipe mid-listing
    server.tool(name=f"filler_{index:03d}", description="x" * 200)(lambda: "filler")


@server.resource("note://ünïcode", mime_type="text/plain", description="Non-ASCII text")
def unicode_note() -> str:
    return "Grüße, 世界"


@server.prompt
def review(code: str, language: str = "python") -> str:
    """Review some code."""
    return f"Review this {language}:\n{code}"
