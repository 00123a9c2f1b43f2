"""An mcpkit server with tools that take their time, for timeout/progress/cancel tests.

Serve with ``mcpkit serve tests/client/peers/slow_server.py [--http --port N]``.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from mcpkit import Context, Server

server = Server("slow-test-server", "1.0.0")


@server.tool
async def sleep(seconds: float) -> str:
    """Sleeps, then answers."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool
async def progress(steps: int, interval: float, ctx: Context) -> str:
    """Reports progress every ``interval`` seconds, ``steps`` times."""
    for step in range(1, steps + 1):
        await anyio.sleep(interval)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"done after {steps} steps"


@server.tool
async def cancellable(marker: str) -> str:
    """Waits; writes ``cancelled`` to the marker file if the request is cancelled."""
    try:
        await anyio.sleep(30)
    except anyio.get_cancelled_exc_class():
        Path(marker).write_text("cancelled")
        raise
    return "finished"


@server.tool
def echo(text: str) -> str:
    """Echoes its argument."""
    return text
