"""A stdio fixture server of plain ``def`` tools registered ``inline=True`` (on the event
loop, not a worker thread) and ``async def`` tools, whose first step the request runner
runs on the stdio reader (no task, no cancel scope); a call that waits keeps the reader's
task, and reading goes on in a new one.

The tools probe what that must not break: an awaitable returned by a plain ``def`` that
enters a cancel scope and waits, a context variable set by a tool (must not leak into the
next request), a wait that the client cancels, the task a call runs in.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable

import anyio
import sniffio

from mcpkit import Server

server = Server("inline-server", "0.0.1")

_caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="unset")
_started: list[str] = []
_cancelled: list[str] = []


@server.tool(inline=True)
def echo(text: str) -> str:
    return text


@server.tool(inline=True)
def remember(value: str) -> str:
    """Set a context variable; return what it held before (always "unset")."""
    before = _caller.get()
    _caller.set(value)
    return before


@server.tool(inline=True)
def later(seconds: float) -> Awaitable[str]:
    """A plain def returning a coroutine that waits inside a cancel scope of its own."""

    async def wait() -> str:
        with anyio.fail_after(30):
            await anyio.sleep(seconds)
        return f"waited {seconds}"

    return wait()


@server.tool(inline=True)
def hang(tag: str) -> Awaitable[str]:
    """Waits until cancelled; records that it started and that it was cancelled."""

    async def wait() -> str:
        _started.append(tag)
        try:
            await anyio.sleep_forever()
        finally:
            _cancelled.append(tag)
        return "never"

    return wait()


@server.tool(inline=True)
def status() -> str:
    """``started:<tags>;cancelled:<tags>`` of the ``hang`` calls so far."""
    return f"started:{','.join(_started)};cancelled:{','.join(_cancelled)}"


def _current_task() -> object:
    if sniffio.current_async_library() == "asyncio":
        import asyncio

        return asyncio.current_task()
    import trio

    return trio.lowlevel.current_task()


@server.tool
async def task_name() -> str:
    """An ``async def`` that never waits: the name of the task it runs in (asyncio numbers
    its tasks' names, so a new task never has an old one's)."""
    task = _current_task()
    name = getattr(task, "get_name", None)
    return name() if name is not None else str(id(task))


@server.tool(inline=True)
def same_task() -> Awaitable[str]:
    """A plain def whose returned awaitable waits: whether the call ends in the task its
    first step ran in."""
    first = _current_task()

    async def rest() -> str:
        await anyio.sleep(0.01)
        return "same task" if _current_task() is first else "another task"

    return rest()
