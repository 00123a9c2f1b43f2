"""What middleware costs a request, in CPU time, measured side by side in one run.

    python -m bench --only middleware                        # this tree's variants
    python -m bench --only middleware --ab-base /tmp/base    # plus a base tree ("before")

Throughput on a machine shared with other work swings by tens of percent between runs, so
this section reads only process CPU time per request, in-process (``bench.profile``: no
socket, no client process): ``server.call`` (dispatch and the handler), the ASGI app
driven with a 2026-07-28 ``tools/call`` POST, and lines through the stdio endpoint.  Each
figure is one fresh process's best of three runs; the variants alternate (A, B, C, A, B,
C, ...) for ``--rounds`` rounds (at least 3) and the table shows medians and each
variant over ``no middleware``:

* ``no middleware``: the bench's server, its echo registered ``inline=True``;
* ``3 no-op middleware``: three middlewares whose ``on_request`` only awaits
  ``call_next``;
* ``before`` and ``before, 3 no-op middleware`` (with ``--ab-base DIR``): ``no
  middleware`` and ``3 no-op middleware`` on ``DIR/src`` (e.g. a ``git archive`` of the
  commit before a change).
"""

from __future__ import annotations

import os
import statistics

from .record import Run
from .variants import REFERENCE, _cpu_per_request, _env

VARIANTS: dict[str, dict[str, str]] = {
    REFERENCE: {},
    "3 no-op middleware": {"MCPKIT_BENCH_MIDDLEWARE": "3"},
}
MODES = {
    "inproc": "CPU per call, in-process server.call (µs)",
    "http-call": "CPU per request, ASGI app in-process (µs)",
    "stdio": "CPU per request, stdio endpoint in-process (µs)",
}


def bench_middleware(ctx: Run, base: str | None) -> None:
    s = ctx.settings
    table: dict[str, dict[str, str]] = {}
    table.update(VARIANTS)
    if base:
        old = {"PYTHONPATH": os.path.join(base, "src")}
        table["before"] = old
        table["before, 3 no-op middleware"] = {**old, **VARIANTS["3 no-op middleware"]}
    n = 2000 if s.quick else 20000
    rounds = 1 if s.quick else max(3, s.rounds)
    samples: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for mode, measure in MODES.items():
            for name, extra in table.items():
                cpu = _cpu_per_request(mode, _env(extra), s.server_cpu, n)
                samples.setdefault(measure, {}).setdefault(name, []).append(cpu)
        ctx.progress("middleware round")
    for measure, by_name in samples.items():
        ctx.variants.setdefault(measure, {}).update(
            {name: statistics.median(values) for name, values in by_name.items()}
        )
