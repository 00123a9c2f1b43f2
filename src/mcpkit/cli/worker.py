"""``mcpkit worker``: run task-backed tool calls queued by ``serve --task-workers external``.

The worker loads the same TARGET the replicas serve (it needs the tools, their
annotations and the middleware), joins the Redis consumer group and runs tasks until
SIGTERM or SIGINT; then it stops taking work, gives running tools ``--grace`` seconds,
hands back the rest and exits 0.  ``--stats`` prints the queue depth as JSON instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from typing import Any

from ..types.extras import require
from .command import Command
from .target import TargetError, load_server

_REDIS = ("redis://", "rediss://", "unix://")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "target", nargs="?", help="the server the replicas serve: path/to/file.py[:name]"
    )
    p.add_argument("--state", required=True, help="the replicas' Redis URL: redis://host:port/0")
    p.add_argument("--concurrency", type=int, default=16, help="tools run at once (default 16)")
    p.add_argument(
        "--grace",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM, how long running tools may finish before they are handed back "
        "(default 30)",
    )
    p.add_argument("--name", help="consumer name in the group (default host-pid-random)")
    p.add_argument("--stats", action="store_true", help="print the queue depth as JSON and exit")
    p.add_argument("--log-level", default="info")


def run(args: argparse.Namespace) -> int:
    if not args.state.startswith(_REDIS):
        print("mcpkit worker: --state must be a redis:// URL (the task queue)", file=sys.stderr)
        return 2
    require("redis", "redis", "mcpkit worker (the Redis task queue)")
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(name)s: %(message)s"
    )
    import anyio

    if args.stats:
        print(json.dumps(anyio.run(_stats, args.state), indent=2))
        return 0
    if not args.target:
        print(
            "mcpkit worker: TARGET is required (the server file the replicas serve)",
            file=sys.stderr,
        )
        return 2
    if args.concurrency < 1:
        print("mcpkit worker: --concurrency must be at least 1", file=sys.stderr)
        return 2
    try:
        server = load_server(args.target)
    except TargetError as exc:
        print(f"mcpkit worker: {exc}", file=sys.stderr)
        return 2
    server.state = args.state
    from ..server.workers import Worker

    worker = Worker(server, concurrency=args.concurrency, grace_s=args.grace, name=args.name)

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        logging.getLogger("mcpkit.workers").info(
                            "worker %s: stopping (grace %gs)", worker.name, worker.grace_s
                        )
                        worker.stop()

            tg.start_soon(on_signal)
            await worker.run()
            tg.cancel_scope.cancel()

    anyio.run(main)
    return 0


async def _stats(url: str) -> dict[str, Any]:
    from ..state.base import open_backend
    from ..state.queue import TaskQueue

    backend = open_backend(url)
    try:
        stats: dict[str, Any] = await TaskQueue.of(backend).stats()
        return stats
    finally:
        await backend.aclose()


COMMAND = Command(
    "worker",
    help="run queued task-backed tool calls (Redis)",
    description="Run the task-backed tool calls that replicas started with "
    "`mcpkit serve --task-workers external` queue in Redis.",
    examples=[
        "mcpkit worker app.py --state redis://127.0.0.1:6379/0",
        "mcpkit worker app.py --state redis://127.0.0.1:6379/0 --concurrency 32 --grace 60",
        "mcpkit worker --stats --state redis://127.0.0.1:6379/0",
    ],
    notes="Tools annotated idempotentHint (or readOnlyHint) run again on another worker "
    "when theirs dies (at least once); any other tool runs at most once and fails clearly.",
    arguments=add_arguments,
    run=run,
)
