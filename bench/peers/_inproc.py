"""Timing loop for in-process dispatch, shared by every contender (runs in its own venv)."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any


async def time_calls(call: Callable[[], Awaitable[object]], n: int) -> None:
    """Warm up, then time ``n`` sequential awaits of ``call``; print one JSON line."""
    for _ in range(max(50, n // 10)):
        await call()
    samples = []
    start = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter_ns()
        await call()
        samples.append(time.perf_counter_ns() - t)
    wall = time.perf_counter() - start
    samples.sort()
    print(
        json.dumps(
            {
                "n": n,
                "calls_per_s": n / wall,
                "p50_us": samples[n // 2] / 1000,
                "p99_us": samples[min(n - 1, int(n * 0.99))] / 1000,
            }
        ),
        flush=True,
    )


async def time_echo(server: Any, n: int) -> None:
    """:func:`time_calls` on ``server.call_tool("echo", ...)``, the in-process call of the
    official SDK's ``MCPServer`` and of FastMCP alike."""

    async def call() -> object:
        return await server.call_tool("echo", {"text": "hello world"})

    await time_calls(call, n)
