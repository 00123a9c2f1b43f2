"""Sequential ``tools/call`` over stdio through a framework's own client, against that
framework's own server: what an application using the framework end to end gets.  Runs in
the framework's venv; each client with its default settings, through its public API:

* mcpkit: ``mcpkit.client.Client(argv)`` and ``await client.call_tool(name, args)``
* sdk: ``mcp.client.stdio.stdio_client`` + ``mcp.ClientSession``, ``initialize()``, then
  ``await session.call_tool(name, args)``
* fastmcp: ``fastmcp.Client(StdioTransport(...))`` and ``await client.call_tool(name, args)``

usage: python client_driver.py FRAMEWORK CALLS -- SERVER_COMMAND...

Warms up, times CALLS sequential calls, checks the last answer and prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

ARGS = {"text": "hello world"}

Call = Callable[[], Awaitable[Any]]


async def _measure(call: Call, n: int) -> dict[str, float]:
    for _ in range(max(100, n // 10)):
        await call()
    lat = [0] * n
    clock = time.perf_counter_ns
    start = clock()
    for i in range(n):
        t = clock()
        result = await call()
        lat[i] = clock() - t
    wall = (clock() - start) / 1e9
    texts = [_text(block) for block in _field(result, "content")]
    if texts != ["hello world"]:
        raise RuntimeError(f"unexpected answer: {result!r}")
    lat.sort()
    return {
        "rps": n / wall,
        "p50_ms": lat[n // 2] / 1e6,
        "p99_ms": lat[min(n - 1, int(n * 0.99))] / 1e6,
    }


def _field(obj: Any, name: str) -> Any:
    """A result member: mcpkit returns TypedDicts, the SDK and FastMCP pydantic models."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def _text(block: Any) -> Any:
    return block.get("text") if isinstance(block, dict) else getattr(block, "text", None)


async def run_mcpkit(cmd: list[str], n: int) -> dict[str, float]:
    from mcpkit.client import Client

    async with Client(cmd) as client:
        return await _measure(lambda: client.call_tool("echo", ARGS), n)


async def run_sdk(cmd: list[str], n: int) -> dict[str, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await _measure(lambda: session.call_tool("echo", ARGS), n)


async def run_fastmcp(cmd: list[str], n: int) -> dict[str, float]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    async with Client(transport) as client:
        return await _measure(lambda: client.call_tool("echo", ARGS), n)


RUNNERS = {"mcpkit": run_mcpkit, "sdk": run_sdk, "fastmcp": run_fastmcp}


def main() -> None:
    sep = sys.argv.index("--")
    framework, calls = sys.argv[1:sep]
    from _serve import use_same_loop

    use_same_loop()  # every framework's client on the same loop (an application's choice)
    out = asyncio.run(RUNNERS[framework](sys.argv[sep + 1 :], int(calls)))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
