"""Custom methods between mcpkit and the TypeScript SDK v2 (``@modelcontextprotocol/client``
and ``@modelcontextprotocol/server`` 2.x, npm), both ways: its client calling
``examples/notes_extension.py`` over Streamable HTTP (``client.request`` with a result
schema, ``setNotificationHandler`` with a params schema), and mcpkit's client calling its
server's ``setRequestHandler(method, {params, result}, handler)`` over stdio.

The packages are installed once into a cache folder next to the conformance harness;
without node/npm the tests are skipped (a failure in CI)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clientkit import PEERS

from mcpkit.client import Client, ServerError
from support.servers import ProcessServer, http_subprocess, need

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
import harness

TS2_VERSION = "2.4.0"
TS2_PACKAGES = [
    f"@modelcontextprotocol/client@{TS2_VERSION}",
    f"@modelcontextprotocol/server@{TS2_VERSION}",
]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notes_extension.py"
TS2_CLIENT = PEERS / "ts2_custom_client.mjs"
TS2_SERVER = PEERS / "ts2_custom_server.mjs"


def ts2_modules() -> Path:
    """The ``node_modules`` holding the TypeScript SDK v2 packages (and their zod),
    installed on first use."""
    need("node")
    target = harness.cache_root() / f"ts-sdk-v2-{TS2_VERSION}"
    modules = target / "node_modules"
    if all((modules / p.rpartition("@")[0] / "package.json").is_file() for p in TS2_PACKAGES):
        return modules
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm not found (needed to install the TypeScript SDK v2)")
    target.mkdir(parents=True, exist_ok=True)
    (target / "package.json").write_text('{"name": "ts-sdk-v2-cache", "private": true}\n')
    cmd = [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", *TS2_PACKAGES]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    return modules


@dataclass
class Echo:
    echo: str
    length: int


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessServer]:
    with http_subprocess(tmp_path_factory.mktemp("notes-ts2"), EXAMPLE) as running:
        yield running


@pytest.mark.parametrize(
    ("mode", "version", "status"), [("auto", "2026-07-28", 404), ("legacy", "2025-11-25", None)]
)
def test_ts2_client_calls_mcpkit_custom_methods(
    served: ProcessServer, mode: str, version: str, status: int | None
) -> None:
    """An unknown method is -32601 on both eras; on 2026-07-28 with HTTP 404, as the
    transport rules say (the SDK reports that as an HTTP error carrying the body)."""
    done = subprocess.run(
        ["node", str(TS2_CLIENT), str(ts2_modules()), served.url, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["protocol"] == version
    assert got["note"]["text"] == "ts2" and got["note"]["tags"] == ["ts2"]
    assert "ts2" in got["found"]
    assert got["added"] == [got["note"]["id"]]
    assert got["unknown"] == {"code": -32601, "status": status}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcpkit_client_calls_a_ts2_servers_custom_method(anyio_backend: str) -> None:
    """Over stdio the SDK's server speaks 2025-11-25 (it answers ``server/discover`` with
    -32601), so mcpkit's client, on ``era="auto"``, calls it on that era."""
    argv = ["node", str(TS2_SERVER), str(ts2_modules())]
    echoed_notes: list[dict[str, Any]] = []
    async with Client(argv) as client:
        client.on_notification("com.example/ts2/echoed", echoed_notes.append)
        echoed = await client.request("com.example/ts2/echo", {"text": "hey"}, result_type=Echo)
        with pytest.raises(ServerError) as unknown:
            await client.request("com.example/ts2/nope", {})
        era = client.era
    assert echoed == Echo(echo="hey", length=3)
    assert echoed_notes == [{"text": "hey"}]
    assert unknown.value.code == -32601
    assert era == "legacy"  # (the SDK's stdio server answers no server/discover)
