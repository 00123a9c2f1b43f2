"""The quick-start server: a few tools, a resource and a prompt.

mcpkit serve examples/quickstart.py --http      # Streamable HTTP on 127.0.0.1:8000/mcp
mcpkit serve examples/quickstart.py             # stdio
"""

from __future__ import annotations

from typing import TypedDict

from mcpkit import Context, Server

server = Server("quickstart", "1.0.0", instructions="A tiny demo: arithmetic, a greeting, a note.")
#: An environment variable the server reads, declared so that `mcpkit pack` asks for it.
greeting = server.setting(
    "QUICKSTART_GREETING", description="The word greet says before a name", default="Hello"
)


class Sum(TypedDict):
    a: float
    b: float
    sum: float


@server.tool
def add(a: float, b: float) -> Sum:
    """Add two numbers (structured output: the result is also JSON)."""
    return {"a": a, "b": b, "sum": a + b}


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
async def greet(ctx: Context) -> str:
    """Ask the user for their name (elicitation), then greet them."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    if answer.get("action") != "accept":
        return "No name, no greeting."
    return f"{greeting.value}, {answer['content']['name']}!"


@server.resource("note://today", mime_type="text/plain", description="Today's note")
def note() -> str:
    return "Remember to hydrate."


@server.prompt
def summarize(text: str) -> str:
    """Ask the model for a one-paragraph summary of the text."""
    return f"Summarize in one paragraph:\n\n{text}"
