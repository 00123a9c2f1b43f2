"""A fixture server whose middleware waits around plain ``def`` tools registered
``inline=True``.

Before it first waits, the middleware ties things to the task it runs in: a context
variable (reset with its token afterwards, which fails in any other context), an anyio
lock (released afterwards, which fails in any other task), a cancel scope, and the
current task itself.  So a transport that ran its first step on one task and finished it
on another fails the request.  With ``{"hold": true}`` in the arguments it waits in the
middleware (not in the tool) until cancelled, writing ``holding <text>`` and then
``cancelled <text>`` to ``waiting-events.txt`` in the working directory.  With
``{"timeout": true}`` its first wait is inside ``asyncio.timeout(0.05)`` (bound to the
current task when entered), which must expire in this request: ``timed_out=True``."""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import Any

import anyio

from mcpkit import Server
from mcpkit.server import CallNext, Context, Middleware

CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("current", default=None)
EVENTS = Path("waiting-events.txt")


class TaskBound(Middleware):
    """Waits before and after ``call_next``."""

    def __init__(self) -> None:
        self.lock = anyio.Lock()

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        arguments = ctx.params.get("arguments") or {}
        text = str(arguments.get("text"))
        seen_before = CURRENT.get()  # None unless a variable leaked from another request
        token = CURRENT.set(text)
        task = asyncio.current_task()
        timed_out = None
        if arguments.get("timeout"):
            try:
                async with asyncio.timeout(0.05):  # cancels the task it was entered in
                    await asyncio.sleep(30)
            except TimeoutError:
                timed_out = True
        try:
            with anyio.move_on_after(60):
                async with self.lock:
                    await anyio.sleep(0)  # a real suspension, inside scope and lock
                    if arguments.get("hold"):
                        with EVENTS.open("a", encoding="utf-8") as sink:
                            sink.write(f"holding {text}\n")
                        await anyio.sleep(60)
                    result = await call_next(ctx)
                    await anyio.sleep(0)
        except anyio.get_cancelled_exc_class():
            with EVENTS.open("a", encoding="utf-8") as sink:
                sink.write(f"cancelled {text}\n")
            raise
        same_task = asyncio.current_task() is task
        CURRENT.reset(token)  # ValueError if the request changed context
        content = result["content"][0]
        content["text"] += f" same_task={same_task} leaked={seen_before}"
        if timed_out is not None:
            content["text"] += f" timed_out={timed_out}"
        return result


server = Server("waiting-middleware", "0.0.1", middleware=[TaskBound()])


@server.tool(inline=True)
def probe(text: str, hold: bool = False, timeout: bool = False) -> str:
    """A plain ``def`` on the loop: it sees the middleware's context variable."""
    return f"{text} var={CURRENT.get()}"
