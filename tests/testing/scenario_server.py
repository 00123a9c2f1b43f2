"""The server every transport and era runs the scenario of ``test_scenarios.py`` against.

A module-level ``server`` so a child process can serve it (``mcpkit serve
scenario_server.py``) while the memory and HTTP cases use the imported object itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from pydantic import BaseModel

from mcpkit import Context, Server, ToolError

server = Server("scenario", "1.0.0")


class Sum(TypedDict):
    sum: float


@dataclass
class Point:
    x: int
    y: int


class Forecast(BaseModel):
    city: str
    celsius: list[float]


@server.tool
def add(a: float, b: float) -> Sum:
    """Add two numbers."""
    return {"sum": a + b}


@server.tool
def midpoint(x1: int, y1: int, x2: int, y2: int) -> Point:
    """The integer midpoint of two points."""
    return Point((x1 + x2) // 2, (y1 + y2) // 2)


@server.tool
def forecast(city: str) -> Forecast:
    """A made-up three-day forecast."""
    return Forecast(city=city, celsius=[float(len(city)), 20.5, -1.0])


@server.tool(structured_output=True)
def count(word: str) -> int:
    """A primitive return, wrapped as {"result": n} on the wire."""
    return len(word)


@server.tool
def divide(a: float, b: float) -> float:
    """Fails as a tool (isError) when dividing by zero."""
    if b == 0:
        raise ToolError("cannot divide by zero")
    return a / b


@server.tool
async def greet(ctx: Context) -> str:
    """Asks the user for a name (elicitation), then a model for a compliment (sampling)."""
    answer = await ctx.elicit(
        "Your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    name = (answer.get("content") or {}).get("name", "nobody")
    reply = await ctx.sample(f"Compliment {name}", max_tokens=20)
    text = (reply.get("content") or {}).get("text", "")
    return f"Hello, {name}! {text}"


@server.tool
async def countdown(n: int, ctx: Context) -> str:
    """Reports progress n times."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
    return "liftoff"


@server.resource("note://today", mime_type="text/plain")
def note() -> str:
    return "Remember to hydrate."


@server.prompt
def summarize(text: str) -> str:
    return f"Summarize: {text}"
