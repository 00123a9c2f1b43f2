"""``python -m bench --quick --only coldstart`` keeps working: mcpkit's cold start through
the Lambda handler is measured (a figure, never compared to a time here) and the peers
are reported as skipped in quick mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mangum")

ROOT = Path(__file__).resolve().parents[2]


def test_coldstart_section_runs(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "coldstart", "--json", str(out)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    payload = json.loads(out.read_text())
    rows = {row["measure"]: row for row in payload["results"]}
    first = rows["Lambda cold start: import to first tools/call answered"]
    assert first["values"]["mcpkit"] > 0
    whole = rows["Lambda cold start: process start to exit"]
    assert whole["values"]["mcpkit"] > first["values"]["mcpkit"]
    assert "sdk" not in first["values"]  # peers are skipped with --quick
    target = next(t for t in payload["targets"] if t["target"].startswith("Lambda cold start"))
    assert target["verdict"] == "n/a"
