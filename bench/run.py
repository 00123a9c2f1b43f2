"""One command that measures mcpkit against the official SDK, FastMCP and the bare floor.

    python -m bench                      # full run (peers from ~/.cache/mcpkit-bench/peers)
    python -m bench --install-peers      # create that virtualenv first (pinned versions)
    python -m bench --quick              # CI smoke: a few seconds, mcpkit and the floor only

Every measure runs the contenders alternately (round-robin, ``--rounds`` times) and keeps
the median, servers on one core and the load generator (wrk, or this process for stdio) on
the other.  The table shows mcpkit's figures divided by each other contender's; only these
ratios mean anything, absolute numbers depend on the machine and its neighbours.  See
bench/README.md for what each measure is.

This module is the command; the rest of the package is split by what it does:
``contenders`` (settings, contenders, processes), ``load`` (the HTTP client and wrk),
``measures`` (HTTP, RSS, in-process, import, gateway), ``stdio``, ``coldstart``,
``variants``/``middleware`` (mcpkit against itself), ``scale``, ``record`` (rows and the
table) and ``targets`` (what a run is read against).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .coldstart import bench_coldstart
from .contenders import (
    ALL,
    DEFAULT_PEERS_VENV,
    EXTRA_SECTIONS,
    SECTIONS,
    contenders,
    install_peers,
    make_settings,
)
from .host_page import bench_host
from .measures import bench_gateway, bench_http, bench_import, bench_inproc, bench_rss
from .middleware import bench_middleware
from .record import Run, ratio, table
from .scale import bench_scale
from .shapes import bench_shapes, shapes_table
from .stdio import bench_stdio
from .stream_memory import bench_memory
from .targets import ISSUE, STRICTER, check_targets
from .variants import bench_variants, variants_table

STACKS = {
    "same": "uvloop+httptools (HTTP), uvloop (stdio servers, all clients)",
    "default": "asyncio+h11 (HTTP), their own asyncio (stdio), asyncio for all clients",
}


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }


# ---------------------------------------------------------------------------- main


@contextlib.contextmanager
def pinned(cpu: int | None) -> Iterator[None]:
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def arguments() -> argparse.ArgumentParser:
    """The command line of ``python -m bench``."""
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: seconds, no peers")
    ap.add_argument("--json", default="bench-results.json", help="where to write the JSON")
    ap.add_argument("--peers-venv", default=str(DEFAULT_PEERS_VENV))
    ap.add_argument("--install-peers", action="store_true", help="create the peers venv and exit")
    ap.add_argument("--duration", type=float, help="seconds per wrk run")
    ap.add_argument("--rounds", type=int, help="alternating rounds per measure")
    ap.add_argument("--rss-calls", help="two call counts for the RSS check, e.g. 10000,100000")
    ap.add_argument(
        "--async-tools",
        action="store_true",
        help="every contender's echo is `async def` (default: a plain `def`, the issue's example)",
    )
    ap.add_argument(
        "--peer-stack",
        choices=("same", "default"),
        default="same",
        help="peers' stack: 'same' as mcpkit (uvloop+httptools over HTTP, uvloop for stdio "
        "servers and all clients; default) or 'default' (what `pip install mcp` gives: "
        "asyncio+h11, the peers' own loop over stdio, plain asyncio for every client)",
    )
    ap.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin servers and load generators to separate cores (default: pinned; "
        "unpinned, a ping-pong can share a core and skip cross-core wake-ups)",
    )
    ap.add_argument(
        "--only",
        help=f"comma-separated sections of {','.join(SECTIONS + EXTRA_SECTIONS)} "
        "(variants, middleware, scale, memory, host: only when named)",
    )
    ap.add_argument(
        "--ab-base",
        metavar="DIR",
        help="shapes, variants, middleware: also run the server on DIR/src (a tree of the "
        "commit to compare with)",
    )
    ap.add_argument(
        "--variants",
        metavar="NAMES",
        help="variants: only these (comma-separated names; 'no middleware' always runs)",
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: blocks
    if args.install_peers:
        return install_peers(Path(args.peers_venv))
    settings = make_settings(args)
    if args.peer_stack == "default":
        os.environ["MCPKIT_BENCH_PEER_STACK"] = "default"  # read by bench/peers/_serve.py
    else:
        os.environ.pop("MCPKIT_BENCH_PEER_STACK", None)
    if args.async_tools:
        os.environ["MCPKIT_BENCH_ASYNC_TOOLS"] = "1"  # read by bench/peers/*_server.py
    else:
        os.environ.pop("MCPKIT_BENCH_ASYNC_TOOLS", None)
    ctx_contenders = contenders(args, settings)
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="mcpkit-bench-") as workdir:
        run = Run(settings, ctx_contenders, workdir)
        for c in ctx_contenders.values():
            if not c.available:
                run.note(f"{c.name}: {c.why_not}")
        steps: dict[str, Callable[[Run], None]] = {
            "import": bench_import,
            "inproc": bench_inproc,
            "stdio": bench_stdio,
            "http": bench_http,
            "shapes": lambda r: bench_shapes(r, args.ab_base),
            "rss": bench_rss,
            "gateway": bench_gateway,
            "coldstart": bench_coldstart,
            "variants": lambda r: bench_variants(r, args.ab_base, args.variants),
            "middleware": lambda r: bench_middleware(r, args.ab_base),
            "scale": bench_scale,  # bench/scale.py (issue #23)
            "memory": bench_memory,  # bench/stream_memory.py (issue #33)
            "host": bench_host,  # bench/host_page.py (issue #35)
        }
        with pinned(settings.client_cpu):
            for section, step in steps.items():
                if section in settings.sections:
                    step(run)
    print()
    print(
        f"mcpkit benchmark, {started:%Y-%m-%d %H:%M} UTC, {machine()['cpu']} x{os.cpu_count()}"
        f"{' (quick)' if settings.quick else ''}; echo is "
        f"{'async def' if args.async_tools else 'a plain def'} in every contender; "
        f"peers' stack: {STACKS[args.peer_stack]}; "
        "ratios are mcpkit / the column's contender"
    )
    if run.rows:
        print(table(run))
    if run.shapes:
        print(
            "\nmcpkit's echo as each shape users write (bench/shapes.py; def: a worker "
            "thread, the default; inline: `inline=True`; medians of alternating rounds):"
        )
        print(shapes_table(run.shapes))
    if run.variants:
        print(
            "\nmcpkit against itself (bench/variants.py, bench/middleware.py; medians of "
            "alternating rounds):"
        )
        print(variants_table(run.variants))
    targets = check_targets(run, args.peer_stack)
    print("\ntargets (informational, from one run):")
    for kind, title in ((ISSUE, "the issue's"), (STRICTER, "stricter than the issue's")):
        print(f" {title}:")
        for t in targets:
            if t.kind == kind:
                shown = "-" if t.ratio is None else f"{t.ratio:.3g}"
                print(f"  [{t.verdict:>11}] {t.target}  (ratio {shown}, want {t.bound})")
    for text in run.notes:
        print(f"  note: {text}")
    payload = {
        "date": started.isoformat(),
        "quick": settings.quick,
        "async_tools": bool(args.async_tools),
        "peer_stack": args.peer_stack,
        "machine": machine(),
        "settings": {
            k: v for k, v in vars(settings).items() if isinstance(v, (int, float, str, tuple, bool))
        },
        "contenders": {
            n: {"available": c.available, "why_not": c.why_not, "versions": c.versions}
            for n, c in ctx_contenders.items()
        },
        "results": [
            {
                "measure": r.measure,
                "unit": r.unit,
                "better": {True: "higher", False: "lower", None: None}[r.higher],
                "values": r.values,
                "errors": r.errors,
                "ratios": {n: ratio(r, n) for n in ALL[1:]},
            }
            for r in run.rows.values()
        ],
        "targets": [dataclasses.asdict(t) for t in targets],
        "variants": run.variants,
        "shapes": run.shapes,
        "notes": run.notes,
    }
    Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
