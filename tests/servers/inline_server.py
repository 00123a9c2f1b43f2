"""A stdio fixture server of plain ``def`` tools registered ``inline=True`` (on the event
loop, not a worker thread), which the stdio endpoint starts inline on
its reader (no task, no cancel scope) and moves to a task of their own only when they wait.

The tools probe what that must not break: an awaitable returned by a plain ``def`` that
enters a cancel scope and waits, a context variable set by a tool (must not leak into the
next request), and a wait that the client cancels.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable

import anyio

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
