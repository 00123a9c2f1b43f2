"""The examples run: every feature's example is exercised as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_client_basics_against_quickstart_over_stdio() -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "client_basics.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "add -> {'a': 2.0, 'b': 3.0, 'sum': 5.0}" in out.stdout
    assert "greet -> Hello, Ada!" in out.stdout
    assert "note -> Remember to hydrate." in out.stdout


def test_multi_server_client_over_the_host_file() -> None:
    """``Client.from_config`` on ``examples/host.json`` (two stdio servers) plus one in
    memory: namespaced tools, a call on each kind, a namespaced resource and prompt."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "multi_server_client.py")],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    for line in (
        "tool: dice__roll_dice",
        "tool: quickstart__add",
        "tool: notes__remember",
        "quickstart__add -> {'a': 2.0, 'b': 3.0, 'sum': 5.0}",
        "notes__remember -> noted: milk",
        "resource: note://quickstart/today",
        "note://quickstart/today -> Remember to hydrate.",
        "quickstart__summarize -> Summarize in one paragraph:",
    ):
        assert line in out.stdout, out.stdout


@pytest.mark.anyio
async def test_jobs_and_baskets_in_process() -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from jobs_and_baskets import server
    finally:
        sys.path.remove(str(EXAMPLES))
    from mcpkit.protocol.negotiation import RequestMeta

    meta = RequestMeta(
        "modern", "2026-07-28", {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    )
    async with server.running():
        made = await server.call(
            "tools/call", {"name": "basket_create", "arguments": {}}, meta=meta
        )
        basket = made["structuredContent"]["basket_id"]
        added = await server.call(
            "tools/call",
            {
                "name": "basket_add",
                "arguments": {"basket_id": basket, "item": "fig", "quantity": 2},
            },
            meta=meta,
        )
        assert added["structuredContent"]["items"] == {"fig": 2}
        task = await server.call(
            "tools/call", {"name": "render_report", "arguments": {"pages": 0}}, meta=meta
        )
        assert task["resultType"] == "task"
        with anyio.fail_after(10):
            while True:
                got = await server.call("tasks/get", {"taskId": task["taskId"]}, meta=meta)
                if got["status"] == "completed":
                    break
                await anyio.sleep(0.05)
        assert got["result"]["content"][0]["text"] == "Rendered a 0-page report."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_testing_example_runs_under_pytest_with_the_plugin() -> None:
    """``examples/test_quickstart.py`` as a user runs it: the ``mcp_client`` fixture comes
    from the installed ``pytest11`` entry point, nothing from this suite's conftest."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(EXAMPLES),
            str(EXAMPLES / "test_quickstart.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "9 passed" in out.stdout


def test_the_evals_example_runs_under_pytest() -> None:
    """``examples/test_quickstart_evals.py``: a scripted eval and a catalog budget pass; the
    real-model eval is skipped without a provider key (and says why)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(EXAMPLES),
            str(EXAMPLES / "test_quickstart_evals.py"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=EXAMPLES,
        env=env,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "2 passed, 1 skipped" in out.stdout
    assert "set ANTHROPIC_API_KEY or OPENAI_API_KEY" in out.stdout


def test_notes_extension_client_in_memory() -> None:
    """``examples/notes_extension.py --client``: the extension's methods and notification
    in memory (its stdio and HTTP runs: tests/transports/test_custom_methods.py)."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "notes_extension.py"), "--client"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "extensions: {'com.example/notes': {'maxNotes': 100}}" in out.stdout
    assert "added: Note(id=1, text='buy figs', tags=['shop'])" in out.stdout
    assert "found: ['buy figs']" in out.stdout
    assert "notified: [1]" in out.stdout
