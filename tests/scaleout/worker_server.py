"""Task tools for the worker tests: each run records itself in the shared state.

``runs:<label>`` holds one entry per time the tool body started (the worker's pid), so a
test can tell how often each task ran and where, straight from Redis.
"""

from __future__ import annotations

import os
from typing import Any

import anyio

from mcpkit import Context, Server

server = Server("worker-test", "1.0.0")


async def _record(ctx: Context, label: str) -> int:
    def add(old: Any) -> list[int]:
        return [*(old or []), os.getpid()]

    runs: list[int] = await ctx.server.state.update_json(f"runs:{label}", add, 3600)
    return len(runs)


@server.tool(task="required", annotations={"idempotentHint": True})
async def job_again(label: str, seconds: float, ctx: Context) -> str:
    """Safe to repeat: a worker that dies mid-run has it run again elsewhere."""
    await _record(ctx, label)
    await anyio.sleep(seconds)
    return f"{label} done by {os.getpid()}"


@server.tool(task="required")
async def job_once(label: str, seconds: float, ctx: Context) -> str:
    """Not idempotent: runs at most once."""
    await _record(ctx, label)
    await anyio.sleep(seconds)
    return f"{label} done by {os.getpid()}"


@server.tool(task="required")
async def ask_then_finish(ctx: Context) -> str:
    """Asks a question inside the task (answered with tasks/update)."""
    answer = await ctx.elicit(
        "Go?", {"type": "object", "properties": {"go": {"type": "boolean"}}}, key="go"
    )
    return f"answered {answer.get('action')} on {os.getpid()}"


@server.tool(task="required")
async def whoami(ctx: Context) -> dict[str, Any]:
    """What the worker knows about the request."""
    return {
        "pid": os.getpid(),
        "principal": None if ctx.principal is None else str(ctx.principal),
        "tenant": ctx.request.header("x-tenant"),
        "authorization": ctx.request.header("authorization"),
        "task": ctx.task_id,
    }


@server.tool
def plain(x: int) -> int:
    """Not a task tool: answered by the replica directly."""
    return x * 2


@server.tool(task="required", task_start="manual")
async def confirm_then_work(label: str, ctx: Context) -> str:
    """Asks synchronously (an MRTR round), then becomes a task: a worker replays the
    question part with the stored answers and runs the rest."""
    answer = await ctx.elicit(
        "Proceed?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="ok"
    )
    await ctx.start_task()
    await _record(ctx, label)
    return f"{label}: {answer.get('action')} on {os.getpid()}"
