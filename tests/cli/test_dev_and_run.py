"""``mcpkit dev`` reloads on change; ``python demo.py`` with ``server.run()`` serves; the
Python client takes a server file as its target.  Real processes throughout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcpkit.client import Client, ElicitResult
from mcpkit.types.versions import EraChoice
from support.servers import free_port, kill_group, spawn

HERE = Path(__file__).resolve().parent
QUICKSTART = HERE.parent.parent / "examples" / "quickstart.py"

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _server_file(folder: Path, version: str, *, run: str = "") -> Path:
    path = folder / "demo.py"
    path.write_text(
        "from mcpkit import Server\n"
        f"server = Server('demo', {version!r})\n"
        "@server.tool\n"
        "def hello() -> str:\n"
        f"    return 'hello from {version}'\n" + run
    )
    return path


async def _call_until(url: str, expected: str, deadline_s: float = 60) -> str:
    """Call ``hello`` until it answers ``expected`` (the dev server restarts meanwhile)."""
    last: str = ""
    with anyio.move_on_after(deadline_s):
        while True:
            try:
                async with Client(url, timeout=5, startup_timeout=5) as client:
                    result = await client.call_tool("hello")
                    last = result["content"][0]["text"]
                    if last == expected:
                        return last
            except Exception as exc:  # restarting: connection refused for a moment
                last = repr(exc)
            await anyio.sleep(0.3)
    return last


async def test_dev_serves_and_restarts_when_the_file_changes(tmp_path: Path) -> None:
    path = _server_file(tmp_path, "1")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path.parent / f"{tmp_path.name}-dev.log"  # outside the watched folder
    proc = spawn(
        [sys.executable, "-m", "mcpkit", "dev", str(path), "--port", str(port)], log, cwd=tmp_path
    )
    try:
        assert await _call_until(url, "hello from 1") == "hello from 1"
        _server_file(tmp_path, "2")
        assert await _call_until(url, "hello from 2") == "hello from 2"
        (tmp_path / "server.log").write_text("a log beside the file is no reason to restart")
        await anyio.sleep(2.5)  # past watchfiles' debounce
        assert await _call_until(url, "hello from 2") == "hello from 2"
    finally:
        kill_group(proc, grace=30)
    text = log.read_text()
    assert f"serving {path} at {url}" in text
    assert "demo.py changed; restarting" in text
    assert "server.log" not in text


async def test_python_demo_py_runs_the_server_over_stdio(tmp_path: Path) -> None:
    path = _server_file(tmp_path, "3", run="if __name__ == '__main__':\n    server.run()\n")
    async with Client([sys.executable, str(path)], cwd=tmp_path) as client:
        result = await client.call_tool("hello")
    assert result["content"][0]["text"] == "hello from 3"
    # over stdio the state is in memory, as with `mcpkit serve`: nothing left in the folder
    assert not (tmp_path / ".mcpkit").exists()


async def test_server_run_over_http(tmp_path: Path) -> None:
    port = free_port()
    path = _server_file(
        tmp_path, "4", run=(f"if __name__ == '__main__':\n    server.run('http', port={port})\n")
    )
    log = tmp_path.parent / f"{tmp_path.name}-run.log"
    proc = spawn([sys.executable, str(path)], log, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        assert await _call_until(url, "hello from 4", 30) == "hello from 4"
    finally:
        kill_group(proc, grace=10)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_client_takes_a_server_file_or_module(
    tmp_path: Path, era: EraChoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    _server_file(tmp_path, "5")
    monkeypatch.chdir(tmp_path)
    for target in ("demo.py", str(tmp_path / "demo.py"), "demo.py:server", "demo:server"):
        async with Client(target, era=era) as client:
            result = await client.call_tool("hello")
        assert result["content"][0]["text"] == "hello from 5", target


async def test_readme_client_snippet_against_the_readme_server(tmp_path: Path) -> None:
    """The quick start's server file, given to the client as is (it only defines a
    server): the client serves it with `mcpkit serve` instead of failing."""

    async def ask_user(params: dict[str, object]) -> ElicitResult:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with Client(str(QUICKSTART), elicitation=ask_user) as client:
        added = await client.call_tool("add", {"a": 1, "b": 2})
        greeted = await client.call_tool("greet")
    assert json.loads(added["content"][0]["text"])["sum"] == 3
    assert greeted["content"][0]["text"] == "Hello, Ada!"


def test_dev_without_a_file_is_a_usage_error(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcpkit", "dev", "missing.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2 and "no such file: missing.py" in out.stderr
