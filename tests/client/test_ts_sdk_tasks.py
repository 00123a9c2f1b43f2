"""2025-11-25 core tasks across implementations, with the TypeScript SDK 1.x (its
experimental tasks API; the SDK the conformance harness ships): its client against
``mcpkit serve`` of the conformance fixture server over Streamable HTTP, and mcpkit's
client against its server (``peers/ts_tasks_server.mjs``, its in-memory task store) over
stdio.

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

from mcpkit.client import Client, Task
from support.servers import ProcessServer, http_subprocess, need

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
import harness

TS_CLIENT = PEERS / "ts_tasks_client.mjs"
TS_SERVER = PEERS / "ts_tasks_server.mjs"


def sdk_dir() -> Path:
    """The TypeScript SDK's ESM build inside the conformance harness install."""
    need("node")
    return harness.ensure_harness().parents[2] / "sdk" / "dist" / "esm"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessServer]:
    with http_subprocess(tmp_path_factory.mktemp("ts-tasks")) as server:
        yield server


def test_typescript_sdk_client_runs_mcpkit_tasks(served: ProcessServer) -> None:
    sdk = sdk_dir()
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
    # notifications/tasks/status reached the TypeScript client's handler
    assert {"mine": True, "status": "cancelled"} in report["statuses"], report["statuses"]
    assert {"mine": False, "status": "completed"} in report["statuses"], report["statuses"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcpkit_client_runs_typescript_sdk_tasks(anyio_backend: str) -> None:
    argv = ["node", str(TS_SERVER), str(sdk_dir())]
    async with Client(argv, era="legacy", tasks=True) as client:
        assert client.protocol_version == "2025-11-25"
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["countdown"]["execution"] == {"taskSupport": "required"}
        statuses: list[str] = []

        def seen(task: dict[str, object]) -> None:
            statuses.append(str(task["status"]))

        done = await client.call_tool("countdown", {}, on_task=seen)
        assert done["content"][0]["text"] == "countdown from the TypeScript task"
        assert statuses == ["working", "completed"]
        task = await client.start_tool_task("maybe", {})
        assert isinstance(task, Task) and task.era == "legacy"
        result = await task.result(timeout=30)
        assert result["content"][0]["text"] == "maybe from the TypeScript task"
        listed = await client.request("tasks/list")
        assert [t["status"] for t in listed["tasks"]] == ["completed", "completed"]
