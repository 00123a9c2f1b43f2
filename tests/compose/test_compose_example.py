"""examples/composition.py runs as shipped: as a script, and served by ``mcpkit serve``
(its proxied quickstart then runs as a grandchild process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcpkit.client import Client

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "composition.py"


def test_the_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tool plus" in done.stdout and "tool qs_add" not in done.stdout
    assert "plus -> {'a': 5.0, 'b': 10.0, 'sum': 15.0}" in done.stdout
    assert "api_get_quote -> {'text': 'Readability counts.'}" in done.stdout
    assert "note://qs/today -> Remember to hydrate." in done.stdout


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_example_served_over_stdio(anyio_backend: str, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "mcpkit", "serve", str(EXAMPLE), "--state", "memory:"]
    async with Client(command, era="legacy") as client:
        names = {t["name"] for t in await client.list_tools()}
        assert {"weather_forecast", "plus", "qs_echo", "api_get_quote"} <= names
        echoed = await client.call_tool("qs_echo", {"text": "through two processes"})
        assert echoed["content"][0]["text"] == "through two processes"
