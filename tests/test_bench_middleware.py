"""``python -m bench --only middleware`` keeps working: it measures every variant in every
mode and writes them to the JSON's ``variants``.  A smoke test: no timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_middleware_quick_reports_each_variant_and_mode(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "middleware", "--json", str(out)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "3 no-op middleware / no middleware" in done.stdout
    variants = json.loads(out.read_text())["variants"]
    assert set(variants) == {
        "CPU per call, in-process server.call (µs)",
        "CPU per request, ASGI app in-process (µs)",
        "CPU per request, stdio endpoint in-process (µs)",
    }
    for by_name in variants.values():
        assert set(by_name) == {"no middleware", "3 no-op middleware"}
        assert all(value > 0 for value in by_name.values())
