"""``pytest --mcp-transport ... --mcp-era ...`` parametrizes a user's suite, run as a user
runs it: a fresh pytest process on a test file that only defines ``mcp_server`` (the
fixture and the options come from the installed ``pytest11`` entry point)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

USER_TESTS = """
import sys
import pytest
sys.path.insert(0, {here!r})
import scenario_server

pytestmark = pytest.mark.anyio

@pytest.fixture
def anyio_backend():
    return "asyncio"

@pytest.fixture
def mcp_server():
    return scenario_server.server

async def test_add(mcp_client, mcp_transport, mcp_era):
    result = await mcp_client.call_tool("add", {{"a": 1, "b": 2}})
    assert result.data == {{"sum": 3.0}}
    assert mcp_client.transport.kind == mcp_transport
    print("RAN", mcp_transport, mcp_era, mcp_client.era)

@pytest.mark.parametrize("mcp_transport", ["memory"])
async def test_pinned_to_memory(mcp_client, mcp_transport):
    assert mcp_client.transport.kind == "memory"
"""


def run(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(USER_TESTS.format(here=str(HERE)))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_user.py"),
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )


def test_options_parametrize_every_mcp_client_test(tmp_path: Path) -> None:
    out = run(
        tmp_path,
        "--mcp-transport",
        "memory",
        "--mcp-transport",
        "http",
        "--mcp-era",
        "modern",
        "--mcp-era",
        "legacy",
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    ran = sorted(re.findall(r"RAN \w+ \w+ \w+", out.stdout))  # -q dots share the lines
    assert ran == [
        "RAN http legacy legacy",
        "RAN http modern modern",
        "RAN memory legacy legacy",
        "RAN memory modern modern",
    ]
    # the pinned test keeps its own transport and only takes the eras: 2 runs
    assert "6 passed" in out.stdout


def test_without_options_the_defaults_apply(tmp_path: Path) -> None:
    out = run(tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "RAN memory auto modern" in out.stdout
    assert "2 passed" in out.stdout
