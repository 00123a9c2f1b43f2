"""The benchmark command keeps working: ``python -m bench --quick`` runs mcpkit and the
floor, prints the ratio table and writes valid JSON.  A smoke test, not a benchmark:
nothing here looks at a timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_quick_prints_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    text = done.stdout
    assert "mcpkit/sdk" in text and "mcpkit/floor" in text
    assert "skipped" in text  # the peers are not run in quick mode
    assert "targets (informational" in text

    payload = json.loads(out.read_text())
    assert payload["quick"] is True
    assert payload["contenders"]["sdk"]["available"] is False
    measures = {row["measure"]: row for row in payload["results"]}
    call = measures["in-process tools/call (no transport)"]
    assert call["values"]["mcpkit"] > 0
    stdio = measures["stdio tools/call sequential (legacy session)"]
    assert stdio["values"]["mcpkit"] > 0 and stdio["values"]["floor"] > 0
    own = measures["stdio tools/call sequential, each framework's own client"]
    assert own["values"]["mcpkit"] > 0 and isinstance(own["ratios"]["floor"], float)
    floor = measures["stdio floor: sequential round trips, raw driver, mcpkit's echo inline=True"]
    assert floor["values"]["mcpkit"] > 0 and isinstance(floor["ratios"]["floor"], float)
    assert isinstance(measures["import of the server API"]["values"]["mcpkit"], float)
    if "http modern-json tools/call c=16 throughput" in measures:  # wrk installed
        row = measures["http modern-json tools/call c=16 throughput"]
        assert row["values"]["mcpkit"] > 0 and row["values"]["floor"] > 0
        assert not row["errors"], row
        assert isinstance(row["ratios"]["floor"], float)
    shapes = payload["shapes"]["stdio tools/call sequential, raw driver (calls/s)"]
    assert shapes.keys() == {"def", "async", "inline"} and min(shapes.values()) > 0
    assert "def / inline" in text and "async / inline" in text
    assert {t["verdict"] for t in payload["targets"]} <= {"met", "NOT met", "floor-bound", "n/a"}
    assert {t["kind"] for t in payload["targets"]} == {"issue", "stricter"}
