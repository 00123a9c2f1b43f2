"""What OpenTelemetry costs a server, in CPU time per request, measured side by side.

    python -m bench.otel --no-otel-python A/bin/python --api-python B/bin/python
    python -m bench.otel --no-otel-python ... --api-python ... --base /tmp/base --rounds 9

``A``: a virtualenv with ``pip install -e '.[fast]'``; ``B``: the same plus
``opentelemetry-api`` alone; this interpreter: the ``otel`` extra (API, SDK, exporters).

Runs ``bench.profile`` (the app driven in-process: CPU time of mcpkit's own code per
request, best of three runs each time) for each configuration below, one after another,
``--rounds`` times, and prints each configuration's median with its ratio to the first.
CPU time, not wall-clock throughput: on a machine shared with other work, calls/s swing by
tens of percent between runs, while CPU per request moves by a few.  The server is the
bench's (``bench/peers/mcpkit_server.py``, its ``MCPKIT_BENCH_OTEL`` switch).

* ``no otel installed``: ``--no-otel-python`` (``opentelemetry`` not importable); the
  reference;
* ``API installed, unused``: ``--api-python``, no middleware: what having the API costs;
* ``API installed, Telemetry``: the span middleware, no SDK installed or set up;
* ``API+SDK installed, Telemetry, no SDK set up``: this interpreter, the same server;
* ``... before`` (with ``--base DIR``): the same on ``DIR/src``;
* ``Telemetry, SDK + batch``: the SDK's tracer provider with a ``BatchSpanProcessor`` and
  an exporter that discards (the SDK's cost on the request path, not a collector's);
* ``Telemetry, SDK + batch + metrics``: also the SDK's meter provider with a periodic reader
  (what ``--otel`` sets up), so the duration histogram is recorded.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_CPU = re.compile(r": ([0-9.]+) µs of CPU per request")


def configurations(
    no_otel: str, api_only: str, base: str | None
) -> list[tuple[str, str, dict[str, str]]]:
    """(name, interpreter, environment additions), the reference first."""
    here = sys.executable
    out = [
        ("no otel installed", no_otel, {}),
        ("API installed, unused", api_only, {}),
        ("API installed, Telemetry", api_only, {"MCPKIT_BENCH_OTEL": "api"}),
        ("API+SDK installed, Telemetry, no SDK set up", here, {"MCPKIT_BENCH_OTEL": "api"}),
    ]
    if base:
        out.append(
            (
                "... the same, before",
                here,
                {"MCPKIT_BENCH_OTEL": "api", "PYTHONPATH": os.path.join(base, "src")},
            )
        )
    out += [
        ("Telemetry, SDK + batch", here, {"MCPKIT_BENCH_OTEL": "sdk"}),
        ("Telemetry, SDK + batch + metrics", here, {"MCPKIT_BENCH_OTEL": "sdk-metrics"}),
    ]
    return out


def cpu_us(python: str, extra: dict[str, str], mode: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("MCPKIT_BENCH_OTEL", "PYTHONPATH")}
    env.update(extra)
    done = subprocess.run(
        [python, "-m", "bench.profile", mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    match = _CPU.search(done.stdout)
    if match is None:
        raise RuntimeError(f"no figure in: {done.stdout!r} {done.stderr[-500:]!r}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--no-otel-python",
        required=True,
        help="an interpreter with mcpkit but without opentelemetry",
    )
    parser.add_argument(
        "--api-python", required=True, help="an interpreter with mcpkit and opentelemetry-api alone"
    )
    parser.add_argument("--base", help="a base tree (e.g. a git archive) for 'before'")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--modes", default="http-call,stdio")
    parser.add_argument("--first", type=int, help="only the first N configurations")
    args = parser.parse_args()
    configs = configurations(args.no_otel_python, args.api_python, args.base)[: args.first]
    modes = args.modes.split(",")
    figures: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        for name, python, extra in configs:  # alternating: load drifts hit every column
            for mode in modes:
                figures.setdefault((name, mode), []).append(cpu_us(python, extra, mode))
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    reference = configs[0][0]
    width = max(len(name) for name, _, _ in configs)
    head = "".join(f"  {mode + ' µs':>13}  {'ratio':>7}" for mode in modes)
    print(f"{'configuration':<{width}}{head}")
    for name, _, _ in configs:
        cells = ""
        for mode in modes:
            value = statistics.median(figures[name, mode])
            ratio = value / statistics.median(figures[reference, mode])
            cells += f"  {value:>13.2f}  {ratio:>6.3f}x"
        print(f"{name:<{width}}{cells}")
    spread = {
        mode: max(max(v) / min(v) for (n, m), v in figures.items() if m == mode) for mode in modes
    }
    print(
        "largest max/min within one configuration: "
        + ", ".join(f"{mode} {value:.3f}" for mode, value in spread.items())
    )


if __name__ == "__main__":
    main()
