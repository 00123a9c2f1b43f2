"""The fixture server of the reliability suite.

Every tool here exists to make one failure observable from outside the process:

* ``echo`` / ``nap_echo`` return the caller's nonce (misrouting shows as a foreign nonce);
* ``slow`` writes ``start``/``cancel``/``end``/``cleanup`` lines to the file named by
  ``MCPKIT_REL_RECORD`` (cancellation and cleanup are visible to the test process);
* ``spin`` is a CPU-bound synchronous tool, ``progress_flood``/``progress_forever`` emit
  progress, ``shout`` floods stderr, ``junk_print``/``child_echo`` try to write to stdout;
* ``ask``/``ask_other`` use MRTR (sealed ``requestState``), ``mint``/``peek`` use handles;
* ``deep`` returns a structured result nested ``depth`` levels deep.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import anyio

from mcpkit import Context, Server, ToolResult

server = Server("mcpkit-reliability", "1.0.0")

RECORD = os.environ.get("MCPKIT_REL_RECORD", "")


def record(line: str) -> None:
    if not RECORD:
        return
    with open(RECORD, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()


@server.tool
def echo(nonce: str) -> str:
    """Returns its argument."""
    return nonce


@server.tool
async def nap_echo(nonce: str, seconds: float = 0.0) -> str:
    """Sleeps, then returns its argument."""
    await anyio.sleep(seconds)
    return nonce


@server.tool
async def slow(
    tag: str, seconds: float = 30.0, progress: bool = True, ctx: Context | None = None
) -> str:
    """Records start, then sleeps (reporting progress when asked and ``progress``);
    records cancel (if cancelled), cleanup and end."""
    record(f"start {tag}")
    try:
        step = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            step += 1
            if ctx is not None and progress:
                await ctx.report_progress(step)
            await anyio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    except anyio.get_cancelled_exc_class():
        record(f"cancel {tag}")
        raise
    finally:
        record(f"cleanup {tag}")
    record(f"end {tag}")
    return f"done {tag}"


@server.tool  # a plain def: in a worker thread, so blocking stalls no other request
def spin(seconds: float) -> str:
    """Burns CPU synchronously for ``seconds``."""
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return f"spun {n}"


@server.tool
async def progress_flood(count: int, ctx: Context) -> str:
    """Sends ``count`` progress notifications as fast as it can, then answers."""
    for i in range(1, count + 1):
        await ctx.report_progress(i, count)
    return f"flooded {count}"


@server.tool
async def progress_forever(interval: float, ctx: Context) -> str:
    """Reports progress every ``interval`` seconds and never finishes on its own."""
    step = 0
    while True:
        step += 1
        await ctx.report_progress(step)
        await anyio.sleep(interval)


@server.tool
def shout(nbytes: int) -> str:
    """Writes ``nbytes`` to stderr in 1 KiB lines."""
    line = b"x" * 1023 + b"\n"
    written = 0
    while written < nbytes:
        os.write(2, line)
        written += len(line)
    return f"shouted {written}"


@server.tool
def junk_print() -> str:
    """print()s to stdout; the stdio transport must keep it off the protocol pipe."""
    print("junk printed by a tool")
    sys.stdout.flush()
    return "printed"


@server.tool
def child_echo() -> str:
    """A child process writing to the stdout it inherited."""
    subprocess.run(["echo", "junk from a child process"], check=True)
    return "child ran"


@server.tool
def size(data: str) -> int:
    """Length of ``data`` (for large payloads)."""
    return len(data)


@server.tool
def big(n: int) -> str:
    """A string of ``n`` bytes."""
    return "b" * n


@server.tool
def deep(depth: int) -> ToolResult:
    """Structured content nested ``depth`` lists deep (text content stays small)."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return ToolResult("deep", structured={"v": value})


@server.tool
def weird_name() -> str:
    """A file name that is not UTF-8, as os.fsdecode() returns it (a lone surrogate)."""
    return os.fsdecode(b"report-\xff.txt")


@server.tool
async def ask(ctx: Context) -> str:
    """Asks for a word (MRTR round trip on 2026-07-28)."""
    answer = await ctx.elicit(
        "A word?", {"type": "object", "properties": {"word": {"type": "string"}}}, key="word"
    )
    return "word=" + str((answer.get("content") or {}).get("word"))


@server.tool
async def ask_other(ctx: Context) -> str:
    """The same question from another tool (a requestState must not move between them)."""
    answer = await ctx.elicit(
        "A word?", {"type": "object", "properties": {"word": {"type": "string"}}}, key="word"
    )
    return "other=" + str((answer.get("content") or {}).get("word"))


@server.tool
async def mint(ctx: Context) -> dict[str, Any]:
    """Creates a handle owned by the caller."""
    return {"handle": await ctx.handles.mint("rel", {"secret": "s3"}, ttl_s=600)}


@server.tool
async def peek(handle: str, ctx: Context) -> dict[str, Any]:
    """Reads a handle (only its owner may)."""
    return {"data": await ctx.handles.get(handle, kind="rel")}


@server.tool
def touch_tools() -> str:
    """Publishes a tools/list_changed event."""
    server.notify_tools_changed()
    return "touched"


@server.tool
async def touch_many(n: int) -> str:
    """Publishes ``n`` tools/list_changed events (yielding now and then)."""
    for i in range(n):
        server.notify_tools_changed()
        if i % 100 == 0:
            await anyio.sleep(0)
    return f"touched {n}"


@server.resource("item://{id}", mime_type="text/plain")
def item(id: str) -> str:
    return f"item {id}"


@server.resource("files://{+path}", mime_type="text/plain")
def files(path: str) -> str:
    return f"file {path}"


@server.resource("note://fixed", mime_type="text/plain")
def note() -> str:
    return "fixed note"


@server.prompt
def hello(name: str) -> str:
    return f"Hello {name}"
