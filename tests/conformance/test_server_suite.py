"""mcpkit's fixture server under the official conformance harness, as a real subprocess.

The server is started exactly as a user would start it (``python -m mcpkit serve ... --http``)
so that the CLI, the HTTP transport and both protocol eras are exercised over real sockets.
One server serves the whole module; each test runs a harness selection against it and, on
failure, shows the harness summary (which scenario, which check, what message).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from harness import SuiteResult, run_server_suite

from support.servers import free_port

pytestmark = pytest.mark.conformance

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 30.0
# Scenarios the harness runs but does not score yet ("pending"); we hold ourselves to them.
PENDING = (
    "json-schema-2020-12",
    "http-header-validation",
    "http-custom-header-server-validation",
    "server-sse-polling",
)


@dataclass
class FixtureServer:
    """A running `mcpkit serve` process and where its output goes."""

    url: str
    process: subprocess.Popen[bytes]
    output: Path

    def output_tail(self, lines: int = 40) -> str:
        text = self.output.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"



def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's whole process group (it may have spawned workers)."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)


def _wait_until_listening(server: FixtureServer, port: int) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(
                f"mcpkit server exited with {server.process.returncode} during startup:\n"
                f"{server.output_tail()}"
            )
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.2)
    _stop(server.process)
    pytest.fail(
        f"mcpkit server not listening on {port} after {STARTUP_TIMEOUT}s:\n{server.output_tail()}"
    )


@pytest.fixture(scope="module")
def mcpkit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureServer]:
    port = free_port()
    output = tmp_path_factory.mktemp("mcpkit-server") / "output.log"
    cmd = [sys.executable, "-m", "mcpkit", "serve", "tests/conformance/server.py"]
    cmd += ["--http", "--port", str(port)]
    with open(output, "wb") as sink:
        process = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            start_new_session=True,
        )
    server = FixtureServer(f"http://127.0.0.1:{port}/mcp", process, output)
    try:
        _wait_until_listening(server, port)
        yield server
    finally:
        _stop(process)


def _check(result: SuiteResult, *, min_passed: int) -> None:
    assert result.failed == 0 and result.passed >= min_passed, result.summary()


def test_requirements_2026_07_28(mcpkit_server: FixtureServer, tmp_path: Path) -> None:
    result = run_server_suite(mcpkit_server.url, requirements="2026-07-28", output_dir=tmp_path)
    _check(result, min_passed=37)


def test_requirements_2025_11_25(mcpkit_server: FixtureServer, tmp_path: Path) -> None:
    result = run_server_suite(mcpkit_server.url, requirements="2025-11-25", output_dir=tmp_path)
    _check(result, min_passed=30)


@pytest.mark.parametrize("scenario", PENDING)
def test_pending_scenario(mcpkit_server: FixtureServer, scenario: str, tmp_path: Path) -> None:
    result = run_server_suite(mcpkit_server.url, scenario=scenario, output_dir=tmp_path)
    assert result.verdict(scenario) == "passed", result.summary()
