"""Task workers: replicas that only queue task work, and workers that run it (Redis).

Two tools run as tasks, and say how they may be retried:

* ``resize_images`` is annotated ``idempotentHint``: resizing again overwrites the same
  files.  If the worker running it dies, another worker runs it again once the task's
  lease lapses (at least once).
* ``charge_card`` is not: charging twice is worse than failing.  If its worker dies
  mid-run, the task fails with an error saying so, and the client decides (at most once).

Run Redis, replicas that queue (any number, behind any load balancer), and workers::

    mcpkit serve examples/task_workers.py --http --port 8001 \\
        --state redis://127.0.0.1:6379/0 --task-workers external
    mcpkit worker examples/task_workers.py --state redis://127.0.0.1:6379/0
    mcpkit worker --stats --state redis://127.0.0.1:6379/0     # queue depth, as JSON

Then, from a client that declares the tasks extension::

    python examples/task_workers.py http://127.0.0.1:8001/mcp

A worker stops on SIGTERM: it takes no new work, lets running tools finish for
``--grace`` seconds, puts re-runnable tasks back in the queue, fails the others, and
exits 0.  Without ``--task-workers external`` (or with SQLite or memory state) the same
file runs its tasks in the replica, as any mcpkit server does.
"""

from __future__ import annotations

import os
import sys

import anyio

from mcpkit import Server

server = Server("task-workers", "1.0.0")


@server.tool(task="required", annotations={"idempotentHint": True})
async def resize_images(album: str, count: int = 3) -> str:
    """Resize every image of an album (safe to repeat)."""
    for _ in range(count):
        await anyio.sleep(0.2)  # one image
    return f"resized {count} images of {album} (worker pid {os.getpid()})"


@server.tool(task="required")
async def charge_card(order: str, cents: int) -> str:
    """Charge the order's card once (never repeated by the queue)."""
    await anyio.sleep(0.5)
    return f"charged {cents} cents for {order} (worker pid {os.getpid()})"


async def _demo(url: str) -> None:
    from mcpkit.client import Client

    async with Client(url, tasks=True) as client:
        resize = await client.start_tool_task("resize_images", {"album": "summer"})
        charge = await client.start_tool_task("charge_card", {"order": "A-17", "cents": 1250})
        for task in (resize, charge):
            result = await task
            print(result["content"][0]["text"])


if __name__ == "__main__":
    anyio.run(_demo, sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8001/mcp")
