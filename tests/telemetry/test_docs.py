"""The Python blocks of ``docs/observability.md`` marked ``<!-- docs-test: run -->`` run as
written (each in a fresh interpreter: they set the global OpenTelemetry providers)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"
_BLOCK = re.compile(r"<!-- docs-test: run -->\n```python\n(?P<body>.*?)```", re.S)
BLOCKS = [m.group("body") for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def test_the_page_has_runnable_blocks() -> None:
    assert BLOCKS


@pytest.mark.parametrize("body", BLOCKS)
def test_block_runs(body: str, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(body, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
