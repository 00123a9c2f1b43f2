"""A/B runs of mcpkit against itself: what a feature costs, measured in one run.

    python -m bench --only variants                       # this tree's variants
    python -m bench --only variants --ab-base /tmp/base   # plus a base tree's src/ ("before")

Variants of ``bench/peers/mcpkit_server.py`` (environment switches read there), run one
after another ``--rounds`` times, each figure the median:

* ``no middleware``: the server as it ships, its echo registered ``inline=True`` (every
  variant's echo is, but one: these measure the machinery, not the tool's shape; the
  reference column for the ratios);
* ``3 no-op middleware``: three middlewares whose ``on_request`` only awaits ``call_next``;
* ``def echo``: the plain ``def`` echo without ``inline=True``, so in a worker thread
  (mcpkit's default for a plain ``def``): the cost of the thread hop (``bench/shapes.py``
  times the three shapes of the tool by themselves);
* ``async echo``: the echo as an ``async def``;
* ``otel middleware, no SDK``: the OpenTelemetry span middleware with only the API
  (no tracer provider set: every span is the API's no-op one);
* ``otel middleware, SDK + batch``: with the SDK, a ``BatchSpanProcessor`` and an exporter
  that discards (the SDK's cost on the request path, not a collector's);
* ``before`` (with ``--ab-base DIR``): the same server on ``DIR/src`` (e.g. a ``git archive``
  of the commit before a change), on this interpreter and its packages; ``before: async
  echo`` its ``async echo``.

Measures: in-process ``server.call`` calls/s; stdio sequential and pipelined ``tools/call``
through the raw driver; modern JSON ``tools/call`` over HTTP at c=16 (wrk); and
``bench.profile``'s CPU time per request (http-call, stdio), the figure least disturbed by
a busy machine.  The ratios are each variant's figure over ``no middleware``.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
from typing import Any

from .contenders import OURS, PEERS_DIR, Proc, _pin
from .load import run_wrk, serve_ours_http, wait_http
from .record import Run, fmt
from .stdio import _run_json, raw_driver_cmd

REFERENCE = "no middleware"
#: name -> environment additions (``PYTHONPATH`` for the base tree is added by the caller).
VARIANTS: dict[str, dict[str, str]] = {
    REFERENCE: {},
    "3 no-op middleware": {"MCPKIT_BENCH_MIDDLEWARE": "3"},
    "def echo": {"MCPKIT_BENCH_ECHO": "def"},
    "async echo": {"MCPKIT_BENCH_ECHO": "async"},
    "otel middleware, no SDK": {"MCPKIT_BENCH_OTEL": "api"},
    "otel middleware, SDK + batch": {"MCPKIT_BENCH_OTEL": "sdk"},
}
BEFORE = "before"
_CPU = re.compile(r": ([0-9.]+) µs of CPU per request")


def variants(base: str | None, only: str | None = None) -> dict[str, dict[str, str]]:
    """The variants to run (``only``: comma-separated names, the reference always)."""
    out: dict[str, dict[str, str]] = {}
    if base:
        out[BEFORE] = {"PYTHONPATH": os.path.join(base, "src")}
        out[f"{BEFORE}: async echo"] = {**out[BEFORE], "MCPKIT_BENCH_ECHO": "async"}
    out.update(VARIANTS)
    if only:
        wanted = {name.strip() for name in only.split(",")} | {REFERENCE}
        out = {name: env for name, env in out.items() if name in wanted}
    return out


def _env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of a variant: its switches over an inline echo."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MCPKIT_BENCH_MIDDLEWARE")
        and k not in ("MCPKIT_BENCH_ECHO", "MCPKIT_BENCH_OTEL", "MCPKIT_BENCH_ASYNC_TOOLS")
    }
    env["MCPKIT_BENCH_ECHO"] = "inline"
    env.update(extra)
    return env


def _cpu_per_request(mode: str, env: dict[str, str], cpu: int | None, n: int) -> float:
    done = subprocess.run(
        [sys.executable, "-m", "bench.profile", mode, "-n", str(n)],
        capture_output=True,
        text=True,
        cwd=str(PEERS_DIR.parent.parent),
        env=env,
        preexec_fn=_pin(cpu),
        timeout=900,
    )
    match = _CPU.search(done.stdout)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"bench.profile {mode} failed: {done.stderr[-1500:]}")
    return float(match.group(1))


def bench_variants(ctx: Run, base: str | None, only: str | None = None) -> None:
    s = ctx.settings
    table = variants(base, only)
    samples: dict[str, dict[str, list[float]]] = {}

    def add(measure: str, name: str, value: float) -> None:
        samples.setdefault(measure, {}).setdefault(name, []).append(value)

    servers: dict[str, tuple[Proc, int]] = {}
    have_wrk = shutil.which("wrk") is not None
    try:
        if have_wrk:
            for name, extra in table.items():
                servers[name] = serve_ours_http(ctx, _env(extra))
            for proc, port in servers.values():
                wait_http(port, proc)
                if s.warmup:
                    run_wrk(port, 16, s.warmup, ["tools/call", "modern", "echo", "-"], s.client_cpu)
        else:
            ctx.note("variants: HTTP skipped (wrk is not installed)")
        n_cpu = 2000 if s.quick else 20000
        for _ in range(s.rounds):
            for name, extra in table.items():
                env = _env(extra)
                inproc = _run_json(
                    [
                        sys.executable,
                        str(PEERS_DIR / "mcpkit_server.py"),
                        "inproc",
                        str(s.inproc_calls),
                    ],
                    s.server_cpu,
                    f"in-process run of {name}",
                    env,
                )
                add("in-process tools/call (calls/s)", name, inproc["calls_per_s"])
                driver = raw_driver_cmd(
                    sys.executable,
                    ctx.contenders[OURS].stdio_cmd(),
                    s.stdio_calls,
                    s.stdio_window,
                    s.server_cpu,
                )
                raw = _run_json(driver, s.client_cpu, f"stdio driver for {name}", env)
                add("stdio tools/call sequential (calls/s)", name, raw["seq"]["rps"])
                add(
                    f"stdio tools/call pipelined, window {s.stdio_window} (calls/s)",
                    name,
                    raw["pipe"],
                )
                if name in servers:
                    _, port = servers[name]
                    got = run_wrk(
                        port, 16, s.duration, ["tools/call", "modern", "echo", "-"], s.client_cpu
                    )
                    add("http modern-json tools/call c=16 (calls/s)", name, got.rps)
                for mode in ("http-call", "stdio"):
                    cpu = _cpu_per_request(mode, env, s.server_cpu, n_cpu)
                    add(f"CPU per request, bench.profile {mode} (µs)", name, cpu)
            ctx.progress("variants round")
    finally:
        for proc, _ in servers.values():
            proc.stop()
    ctx.variants = {
        measure: {name: statistics.median(values) for name, values in by_name.items()}
        for measure, by_name in samples.items()
    }


def variants_table(results: dict[str, dict[str, float]]) -> str:
    """Each measure's median per variant, and each variant over ``no middleware``."""
    if not results:
        return ""
    names: list[str] = []
    for by_name in results.values():
        names.extend(n for n in by_name if n not in names)
    others = [n for n in names if n != REFERENCE]
    header = ["measure", *names, *(f"{n} / {REFERENCE}" for n in others)]
    lines = []
    for measure, by_name in results.items():
        ref = by_name.get(REFERENCE)
        ratios = [f"{by_name[n] / ref:.3f}x" if ref and by_name.get(n) else "-" for n in others]
        lines.append([measure, *(fmt(by_name.get(n)) for n in names), *ratios])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]

    def render(cols: list[Any]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cols, widths, strict=False))
        )

    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines)])
