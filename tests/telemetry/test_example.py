"""``examples/otel_tracing.py`` runs as shipped: its spans reach its local OTLP/HTTP
endpoint, the client and server span of the call in one trace."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_otel_example_exports_one_trace() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "otel_tracing.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "add -> 5" in done.stdout
    spans = re.findall(r"received span 'tools/call add' (SERVER|CLIENT) trace=(\w+)", done.stdout)
    assert sorted(kind for kind, _ in spans) == ["CLIENT", "SERVER"], done.stdout
    assert len({trace for _, trace in spans}) == 1
