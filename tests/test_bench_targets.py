"""The benchmark's target verdicts, on made-up figures (no timing is measured here): the
issue's targets read the SDK as installed, a bar the bare floor itself misses is called
"floor-bound" rather than "NOT met", and --peer-stack default reads the plain rows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import (
    AS_INSTALLED,
    FLOOR,
    OURS,
    SDK,
    SDK_AS_INSTALLED,
    Run,
    _record_as_installed,
    check_targets,
)

C16 = "http modern-json tools/call c=16"
C64 = "http modern-json tools/call c=64"
SEQ = "stdio tools/call sequential (legacy session)"


def _run(rows: dict[str, dict[str, Any]]) -> Run:
    run = Run(None, {}, "")  # type: ignore[arg-type]
    for measure, values in rows.items():
        higher = not measure.endswith(("p50", "p99"))
        for name, value in values.items():
            run.record(measure, name, value, "x", higher=higher)
    return run


def _by_target(targets: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["target"]: t for t in targets}


def _find(targets: list[dict[str, Any]], start: str, kind: str) -> dict[str, Any]:
    hits = [t for t in targets if t["target"].startswith(start) and t["kind"] == kind]
    assert len(hits) == 1, (start, kind, [t["target"] for t in targets])
    return hits[0]


def test_as_installed_rows_pair_our_figure_with_the_sdk_as_installed() -> None:
    run = _run(
        {
            f"{C16} throughput": {OURS: 30000.0, SDK: 3500.0, FLOOR: 50000.0},
            f"{C16} throughput {SDK_AS_INSTALLED}": {SDK_AS_INSTALLED: 2500.0},
            f"{C16} p50": {OURS: 0.5, SDK: 4.0},
            f"{C16} p50 {SDK_AS_INSTALLED}": {SDK_AS_INSTALLED: 5.0},
            f"{C16} p99": {OURS: 0.7, SDK: 40.0},
            f"{C16} p99 {SDK_AS_INSTALLED}": {SDK_AS_INSTALLED: 60.0},
        }
    )
    _record_as_installed(run, C16)
    row = run.rows[f"{C16} throughput{AS_INSTALLED}"]
    assert row.values == {OURS: 30000.0, SDK: 2500.0}
    assert run.rows[f"{C16} p99{AS_INSTALLED}"].values == {OURS: 0.7, SDK: 60.0}
    assert not any(m.endswith(SDK_AS_INSTALLED) for m in run.rows)  # folded into those rows
    assert run.rows[f"{C16} throughput"].values[SDK] == 3500.0  # the same-stack row is kept

    targets = check_targets(run)
    issue = _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "issue")
    assert issue["verdict"] == "met" and issue["ratio"] == pytest.approx(12.0)
    stricter = _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "stricter")
    assert stricter["verdict"] == "NOT met" and stricter["ratio"] == pytest.approx(30000 / 3500)
    floor = _find(targets, "HTTP modern JSON tools/call c=16: >= 50%", "issue")
    assert floor["verdict"] == "met" and floor["ratio"] == pytest.approx(0.6)


def test_a_bar_the_floor_itself_misses_is_floor_bound() -> None:
    run = _run({SEQ: {OURS: 18000.0, SDK: 2800.0, FLOOR: 20000.0}})
    target = _find(check_targets(run), "stdio: >= 20x", "issue")
    assert target["verdict"] == "floor-bound"
    # The floor clears the bar, mcpkit does not: plainly not met.
    run = _run({SEQ: {OURS: 18000.0, SDK: 1000.0, FLOOR: 60000.0}})
    assert _find(check_targets(run), "stdio: >= 20x", "issue")["verdict"] == "NOT met"
    run = _run({SEQ: {OURS: 30000.0, SDK: 1000.0, FLOOR: 60000.0}})
    assert _find(check_targets(run), "stdio: >= 20x", "issue")["verdict"] == "met"


def test_peer_stack_default_reads_the_plain_rows() -> None:
    run = _run(
        {
            f"{C16} throughput": {OURS: 30000.0, SDK: 2400.0, FLOOR: 50000.0},
            f"{C64} p99": {OURS: 2.0, SDK: 90.0},
        }
    )
    targets = check_targets(run, "default")
    assert _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "issue")["verdict"] == "met"
    assert _find(targets, "HTTP modern JSON tools/call c=64", "issue")["verdict"] == "met"
    # The same-stack comparison needs a same-stack run.
    assert _find(targets, "HTTP modern JSON tools/call c=16: >= 10x", "stricter")["verdict"] == (
        "n/a"
    )
    # A same-stack run without the as-installed rows (no peers): the issue's HTTP bar is n/a.
    assert (
        _find(check_targets(run), "HTTP modern JSON tools/call c=16: >= 10x", "issue")["verdict"]
        == "n/a"
    )
