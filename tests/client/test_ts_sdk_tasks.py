"""A peer's client calling mcpkit's 2025-11-25 core tasks: the TypeScript SDK 1.x client
(its experimental tasks API, the one the conformance harness ships) against
``mcpkit serve`` of the conformance fixture server over Streamable HTTP.

The official Python SDK (``mcp`` 2.x) has no 2025-11-25 tasks API, so the TypeScript SDK
is the peer here.  It comes with the conformance harness (``conformance/harness.py``
installs it once, cached); without node the test is skipped (a failure in CI)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clientkit import PEERS

from support.servers import ProcessServer, http_subprocess, need

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
import harness

TS_CLIENT = PEERS / "ts_tasks_client.mjs"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessServer]:
    with http_subprocess(tmp_path_factory.mktemp("ts-tasks")) as server:
        yield server


def test_typescript_sdk_client_runs_mcpkit_tasks(served: ProcessServer) -> None:
    need("node")
    sdk = harness.ensure_harness().parents[2] / "sdk" / "dist" / "esm"
    done = subprocess.run(
        ["node", str(TS_CLIENT), str(sdk), served.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert report["execution"]["slow_compute"] == "optional"
    assert report["execution"]["confirm_delete"] == "required"
    assert report["execution"]["greet"] is None
    slow = report["slow"]
    assert slow["kinds"][0] == "taskCreated" and slow["kinds"][-1] == "result"
    assert slow["result"]["content"][0]["text"] == "Computed ts after 0.2s"
    # input inside the task reached the TypeScript client's handler through tasks/result
    assert report["confirm"]["result"]["content"][0]["text"] == "Deleted b.txt"
    [asked] = report["elicited"]
    assert asked["message"] == "Delete b.txt?"
    assert report["broken"]["error"]["code"] == -32603
    assert report["listed"] == ["completed", "completed", "failed"]
    assert report["cancelled"] == "cancelled" and report["got"] == "cancelled"
