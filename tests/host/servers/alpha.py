"""Test server "alpha" (mcpkit, stdio): tools that record every call they receive.

Each call appends the tool name to ``$HOST_TEST_DIR/<server name>.calls``, so a test can
prove that a denied call never reached the server process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio

from mcpkit import Context, Server
from mcpkit.transports.stdio import run_stdio

NAME = os.environ.get("SERVER_NAME", "alpha")
server = Server(NAME, "1.0.0", instructions="Arithmetic, notes and a crash button.")


def record(tool: str) -> None:
    folder = os.environ.get("HOST_TEST_DIR")
    if folder:
        with (Path(folder) / f"{NAME}.calls").open("a") as out:
            out.write(tool + "\n")


@server.tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    record("add")
    return f"{NAME}: {a + b:g}"


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    record("echo")
    return text


@server.tool(annotations={"readOnlyHint": True, "title": "Definitely harmless"})
def write_note(text: str) -> str:
    """Append a note to the notebook (claims to be read-only, which is a lie)."""
    record("write_note")
    return f"saved: {text}"


@server.tool
def crash() -> str:
    """Exit the process at once, as a crashing server would."""
    record("crash")
    sys.stdout.flush()
    os._exit(3)


@server.tool
async def slow(ctx: Context, steps: int = 3) -> str:
    """Count to ``steps``, reporting progress on the way."""
    record("slow")
    try:
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i} of {steps}")
            await anyio.sleep(0.05)
    except anyio.get_cancelled_exc_class():
        record("slow-cancelled")  # the client's cancellation reached the server
        raise
    return f"counted to {steps}"


@server.tool(task="required")
async def long_job(steps: int = 2) -> str:
    """Runs only as a task (the tasks extension): the client must declare it."""
    record("long_job")
    for _ in range(steps):
        await anyio.sleep(0.05)
    return f"job done after {steps} steps"


@server.tool
async def ask_name(ctx: Context) -> str:
    """Ask the person for their name (form elicitation), then greet them."""
    record("ask_name")
    answer = await ctx.elicit(
        "What is your name?",
        {
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Name"}},
            "required": ["name"],
        },
    )
    if answer.get("action") != "accept":
        return f"no name ({answer.get('action')})"
    return f"Hello, {answer['content']['name']}!"


@server.tool(
    input_schema={
        "type": "object",
        "$defs": {
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            }
        },
        "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
        "required": ["start", "end"],
    }
)
def distance(start: dict[str, Any], end: dict[str, Any]) -> str:
    """Distance between two points (its schema uses $ref)."""
    record("distance")
    dx, dy = end["x"] - start["x"], end["y"] - start["y"]
    return f"{(dx * dx + dy * dy) ** 0.5:g}"


@server.tool
def grow() -> str:
    """Register one more tool (the server then says its tool list changed)."""
    record("grow")

    def extra() -> str:
        """A tool that did not exist at start."""
        return "extra"

    server.tool(extra)
    return "grew"


@server.resource("note://alpha/today", mime_type="text/plain", description="Today's note")
def note() -> str:
    return "Water the plants."


@server.prompt
def review(topic: str) -> str:
    """Ask for a short review of a topic."""
    return f"Write a two-line review of {topic}."


TEAS = ["green tea", "genmaicha", "gunpowder", "black tea", "oolong"]


@server.completion
def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
    """Suggestions for the review prompt's topic, by prefix."""
    if ref.get("name") == "review" and argument.get("name") == "topic":
        return [t for t in TEAS if t.startswith(str(argument.get("value", "")))]
    return []


if __name__ == "__main__":
    run_stdio(server)
