"""The benchmark's target verdicts, on made-up figures (no timing is measured here): the
issue's targets read the SDK as installed, a bar the bare floor itself misses is called
"floor-bound" rather than "NOT met", and --peer-stack default reads the plain rows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.contenders import FLOOR, OURS, SDK, make_settings
from bench.measures import _record_gateway_cpu
from bench.record import Run
from bench.run import arguments
from bench.stdio import alternate, floor_rounds, record_floor
from bench.targets import (
    AS_INSTALLED,
    GATEWAY_CPU,
    STDIO_FLOOR,
    STDIO_FLOOR_ONE_CORE,
    TargetCheck,
    check_targets,
    record_as_installed,
)

C16 = "http modern-json tools/call c=16"
C64 = "http modern-json tools/call c=64"
SEQ = "stdio tools/call sequential (legacy session)"
OWN = "stdio tools/call sequential, each framework's own client"


def _run(rows: dict[str, dict[str, Any]]) -> Run:
    run = Run(make_settings(arguments().parse_args(["--quick"])), {}, "")
    for measure, values in rows.items():
        higher = not measure.endswith(("p50", "p99"))
        for name, value in values.items():
            run.record(measure, name, value, "x", higher=higher)
    return run


def _find(targets: list[TargetCheck], start: str, kind: str) -> TargetCheck:
    hits = [t for t in targets if t.target.startswith(start) and t.kind == kind]
    assert len(hits) == 1, (start, kind, [t.target for t in targets])
    return hits[0]


def test_as_installed_rows_pair_our_figure_with_the_sdk_as_installed() -> None:
    run = _run(
        {
            f"{C16} throughput": {OURS: 30000.0, SDK: 3500.0, FLOOR: 50000.0},
            f"{C16} p99": {OURS: 0.7, SDK: 40.0},
            SEQ: {OURS: 18000.0, SDK: 2800.0, FLOOR: 20000.0},
        }
    )
    record_as_installed(run, f"{C16} throughput", 2500.0)
    record_as_installed(run, f"{C16} p99", 60.0, errors=3)
    record_as_installed(run, "a measure nobody recorded", 1.0)
    row = run.rows[f"{C16} throughput{AS_INSTALLED}"]
    assert row.values == {OURS: 30000.0, FLOOR: 50000.0, SDK: 2500.0}
    assert row.higher is True and row.unit == run.rows[f"{C16} throughput"].unit
    p99 = run.rows[f"{C16} p99{AS_INSTALLED}"]
    assert p99.values == {OURS: 0.7, SDK: 60.0} and p99.errors == {SDK: 3}
    assert p99.higher is False
    assert "a measure nobody recorded" + AS_INSTALLED not in run.rows
    assert run.rows[f"{C16} throughput"].values[SDK] == 3500.0  # the same-stack row is kept

    targets = check_targets(run)
    issue = _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "issue")
    assert issue.verdict == "met" and issue.ratio == pytest.approx(12.0)
    stricter = _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "stricter")
    assert stricter.verdict == "NOT met" and stricter.ratio == pytest.approx(30000 / 3500)
    floor = _find(targets, "HTTP modern JSON tools/call c=16: >= 50%", "issue")
    assert floor.verdict == "met" and floor.ratio == pytest.approx(0.6)


def test_a_bar_the_floor_itself_misses_is_floor_bound() -> None:
    def verdicts(sdk: float, ours: float, floor: float) -> tuple[str, str]:
        run = _run({SEQ: {OURS: ours, SDK: sdk, FLOOR: floor}})
        record_as_installed(run, SEQ, sdk)
        targets = check_targets(run)
        stricter = _find(targets, "stdio: >= 20x the SDK's sequential calls/s, one raw", "stricter")
        return _find(targets, "stdio: >= 20x", "issue").verdict, stricter.verdict

    assert verdicts(2800.0, 18000.0, 20000.0) == ("floor-bound", "floor-bound")
    # The floor clears the bar, mcpkit does not: plainly not met.
    assert verdicts(1000.0, 18000.0, 60000.0) == ("NOT met", "NOT met")
    assert verdicts(1000.0, 30000.0, 60000.0) == ("met", "met")


def test_peer_stack_default_reads_the_plain_rows() -> None:
    run = _run(
        {
            f"{C16} throughput": {OURS: 30000.0, SDK: 2400.0, FLOOR: 50000.0},
            f"{C64} p99": {OURS: 2.0, SDK: 90.0},
        }
    )
    targets = check_targets(run, "default")
    assert _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "issue").verdict == "met"
    assert _find(targets, "HTTP modern JSON tools/call c=64", "issue").verdict == "met"
    # The same-stack comparison needs a same-stack run.
    assert _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "stricter").verdict == ("n/a")
    run = _run({OWN: {OURS: 15000.0, SDK: 700.0, FLOOR: 20000.0}})
    targets = check_targets(run, "default")
    own = _find(targets, "stdio: >= 20x the SDK's sequential calls/s, each", "stricter")
    assert own.verdict == "met"  # still read: both clients run as installed there
    raw = _find(targets, "stdio: >= 20x the SDK's sequential calls/s, one raw", "stricter")
    assert raw.verdict == "n/a"  # the same-stack twin of an issue target
    # A same-stack run without the as-installed rows (no peers): the issue's HTTP bar is n/a.
    assert (
        _find(check_targets(run), "HTTP modern JSON tools/call c=16: >= 10x", "issue").verdict
        == "n/a"
    )


def test_gateway_cpu_per_call_is_read_against_the_upstreams() -> None:
    def verdict(gateway_s: float, upstream_s: float, calls: float) -> tuple[Any, str]:
        run = _run({})
        _record_gateway_cpu(run, "gateway", 16, gateway_s, upstream_s, calls)
        found = _find(check_targets(run), "gateway CPU per forwarded tools/call", "issue")
        return run.rows[GATEWAY_CPU].values[OURS], found.verdict

    assert verdict(2.0, 0.5, 10_000) == (4.0, "NOT met")
    assert verdict(0.6, 0.5, 10_000) == (1.2, "met")
    run = _run({})
    _record_gateway_cpu(run, "gateway", 16, 2.0, 0.5, 10_000)  # per call, in µs
    assert run.rows["gateway CPU per forwarded tools/call, c=16"].values[OURS] == 200.0
    assert run.rows["gateway upstream's CPU per call it serves, c=16"].values[OURS] == 50.0
    # No gateway row (no wrk, no gateway): not a verdict either way.
    assert _find(check_targets(_run({})), "gateway CPU", "issue").verdict == "n/a"


def test_the_shapes_are_read_against_the_same_echo_inline() -> None:
    run = _run({})
    run.shapes = {
        "http modern-json tools/call c=16 (calls/s)": {
            "before def": 4000.0,
            "def": 7000.0,
            "async": 9500.0,
            "inline": 10000.0,
        },
        "stdio tools/call sequential, raw driver (calls/s)": {"def": 5000.0, "inline": 10000.0},
    }
    targets = check_targets(run)
    http_def = _find(targets, "http modern-json tools/call c=16: a plain `def`", "issue")
    assert http_def.verdict == "met" and http_def.ratio == pytest.approx(0.7)
    http_async = _find(targets, "http modern-json tools/call c=16: an `async def`", "issue")
    assert http_async.verdict == "met" and http_async.ratio == pytest.approx(0.95)
    stdio_def = _find(targets, "stdio tools/call sequential, raw driver: a plain", "issue")
    assert stdio_def.verdict == "NOT met" and stdio_def.ratio == pytest.approx(0.5)
    stdio_async = _find(targets, "stdio tools/call sequential, raw driver: an `async", "issue")
    assert stdio_async.verdict == "n/a" and stdio_async.ratio is None


def test_the_stdio_floor_alternates_its_sides_and_reads_their_medians() -> None:
    order: list[str] = []
    figures = {OURS: iter([9000.0, 20000.0, 11000.0]), FLOOR: iter([30000.0, 10000.0, 20000.0])}

    def measure(name: str) -> float:
        order.append(name)
        return next(figures[name])

    samples = alternate((OURS, FLOOR), 3, measure)
    assert order == [OURS, FLOOR, FLOOR, OURS, OURS, FLOOR]  # each side first in turn
    assert samples == {OURS: [9000.0, 20000.0, 11000.0], FLOOR: [30000.0, 10000.0, 20000.0]}
    run = _run({})
    record_floor(run, STDIO_FLOOR, samples)
    record_floor(run, STDIO_FLOOR_ONE_CORE, {OURS: [10000.0], FLOOR: [40000.0]})
    assert run.rows[STDIO_FLOOR].values == {OURS: 11000.0, FLOOR: 20000.0}
    targets = check_targets(run)
    across = _find(targets, "stdio floor: sequential round trips", "issue")
    assert across.verdict == "NOT met" and across.ratio == pytest.approx(0.55)
    one_core = _find(targets, "stdio floor on one core", "issue")
    assert one_core.verdict == "NOT met" and one_core.ratio == pytest.approx(0.25)
    record_floor(run, STDIO_FLOOR, {OURS: [13000.0], FLOOR: [20000.0]})
    assert _find(check_targets(run), "stdio floor: sequential", "issue").verdict == "met"
    # Without the rows (the stdio section not run): no verdict either way.
    assert _find(check_targets(_run({})), "stdio floor on one core", "issue").verdict == "n/a"


def test_the_stdio_floor_runs_several_rounds_of_a_thousand_calls_even_when_quick() -> None:
    quick = make_settings(arguments().parse_args(["--quick"]))
    assert floor_rounds(quick) == (3, 1000)
    full = make_settings(arguments().parse_args(["--rounds", "2"]))
    assert floor_rounds(full) == (5, 3000)
    assert floor_rounds(make_settings(arguments().parse_args(["--rounds", "7"])))[0] == 7
