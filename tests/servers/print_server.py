"""A stdio fixture server whose tools misbehave on purpose: they print to stdout, write to
file descriptor 1, start a child process that inherits stdout, and return text that JSON
cannot encode.  None of it may corrupt the protocol stream."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio

from mcpkit import Context, Server

server = Server("print-server", "0.0.1")


@server.tool
def noisy() -> str:
    """Writes garbage to stdout in every way a tool might."""
    print("print() from a tool")
    print("another line\nwith a newline", flush=True)
    sys.stdout.write("sys.stdout.write without newline")
    sys.stdout.flush()
    os.write(1, b"raw write to fd 1\n")
    subprocess.run([sys.executable, "-c", "print('child process on inherited stdout')"], check=True)
    return "quiet result"


@server.tool
def surrogate() -> str:
    """Returns a lone surrogate (e.g. a filename decoded with surrogateescape)."""
    return "bad \udcff name"


@server.tool
async def sleepy(seconds: float, ctx: Context) -> str:
    await ctx.report_progress(0, 1)
    await anyio.sleep(seconds)
    return "slept"


@server.tool
def echo(text: str) -> str:
    return text
