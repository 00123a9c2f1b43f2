"""The shapes users write, side by side: the same ``echo`` tool as a plain ``def`` (the
default: a worker thread), as an ``async def``, and as a plain ``def`` registered
``inline=True`` (on the event loop), in one run.

    python -m bench --only shapes                       # this tree
    python -m bench --only shapes --ab-base /tmp/base   # and a base tree's src/ ("before")

Each shape is ``bench/peers/mcpkit_server.py`` with ``MCPKIT_BENCH_ECHO`` set; the shapes
(and, with ``--ab-base``, the base tree's shapes) run one after another ``--rounds`` times,
each figure the median: modern JSON ``tools/call`` over HTTP at c=16 (wrk), and sequential
and pipelined ``tools/call`` over stdio through the raw driver.  The table shows each
shape's figure and ``def / inline``, ``async / inline`` of each tree.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys

from .contenders import OURS, Proc
from .load import run_wrk, serve_ours_http, wait_http
from .record import Run, fmt
from .stdio import _run_json, raw_driver_cmd

SHAPES = ("def", "async", "inline")
#: (the shape over inline, the label of its ratio)
RATIOS = (("def", "def / inline"), ("async", "async / inline"))
BEFORE = "before "
HTTP = "http modern-json tools/call c=16 (calls/s)"
STDIO = "stdio tools/call sequential, raw driver (calls/s)"


def columns(base: str | None) -> dict[str, dict[str, str]]:
    """Column name -> environment additions (the base tree's columns first)."""
    out: dict[str, dict[str, str]] = {}
    trees = [(BEFORE, {"PYTHONPATH": os.path.join(base, "src")})] if base else []
    trees.append(("", {}))
    for prefix, extra in trees:
        for shape in SHAPES:
            out[prefix + shape] = {**extra, "MCPKIT_BENCH_ECHO": shape}
    return out


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MCPKIT_BENCH_ECHO", "MCPKIT_BENCH_ASYNC_TOOLS", "PYTHONPATH")
    }
    env.update(extra)
    return env


def bench_shapes(ctx: Run, base: str | None) -> None:
    s = ctx.settings
    table = columns(base)
    samples: dict[str, dict[str, list[float]]] = {}

    def add(measure: str, name: str, value: float) -> None:
        samples.setdefault(measure, {}).setdefault(name, []).append(value)

    servers: dict[str, tuple[Proc, int]] = {}
    wrk_args = ["tools/call", "modern", "echo", "-"]
    try:
        if shutil.which("wrk"):
            for name, extra in table.items():
                servers[name] = serve_ours_http(ctx, _env(extra))
            for proc, port in servers.values():
                wait_http(port, proc)
                if s.warmup:
                    run_wrk(port, 16, s.warmup, wrk_args, s.client_cpu)
        else:
            ctx.note("shapes: HTTP skipped (wrk is not installed)")
        for _ in range(s.rounds):
            for name, extra in table.items():
                if name in servers:
                    got = run_wrk(servers[name][1], 16, s.duration, wrk_args, s.client_cpu)
                    add(HTTP, name, got.rps)
                driver = raw_driver_cmd(
                    sys.executable,
                    ctx.contenders[OURS].stdio_cmd(),
                    s.stdio_calls,
                    s.stdio_window,
                    s.server_cpu,
                )
                raw = _run_json(driver, s.client_cpu, f"stdio driver for {name}", _env(extra))
                add(STDIO, name, raw["seq"]["rps"])
                add(
                    f"stdio tools/call pipelined, window {s.stdio_window}, raw driver (calls/s)",
                    name,
                    raw["pipe"],
                )
            ctx.progress("shapes round")
    finally:
        for proc, _ in servers.values():
            proc.stop()
    ctx.shapes = {
        measure: {name: statistics.median(values) for name, values in by_name.items()}
        for measure, by_name in samples.items()
    }


def shape_ratios(by_name: dict[str, float]) -> dict[str, float]:
    """``def / inline`` and ``async / inline`` of each tree that has the figures."""
    out: dict[str, float] = {}
    for prefix in (BEFORE, ""):
        inline = by_name.get(prefix + "inline")
        for shape, label in RATIOS:
            value = by_name.get(prefix + shape)
            if inline and value:
                out[prefix + label] = value / inline
    return out


def shapes_table(results: dict[str, dict[str, float]]) -> str:
    """Each measure's median per shape, then each shape over ``inline`` per tree."""
    if not results:
        return ""
    names: list[str] = []
    labels: list[str] = []
    for by_name in results.values():
        names.extend(n for n in by_name if n not in names)
        labels.extend(k for k in shape_ratios(by_name) if k not in labels)
    header = ["measure", *names, *labels]
    lines = []
    for measure, by_name in results.items():
        ratios = shape_ratios(by_name)
        lines.append(
            [
                measure,
                *(fmt(by_name.get(n)) for n in names),
                *(f"{ratios[k]:.2f}x" if k in ratios else "-" for k in labels),
            ]
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]

    def render(cols: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cols, widths, strict=False))
        )

    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines)])
