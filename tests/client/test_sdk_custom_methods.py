"""The official Python SDK (``mcp``, its own cached venv: ``support/sdk_venv.py``) calling
an mcpkit server's custom methods: ``examples/notes_extension.py`` served over Streamable
HTTP, the SDK's ``ClientSession.send_request`` with request models of its own and a
``NotificationBinding`` for the server's custom notification, in both eras."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from clientkit import PEERS

from support import sdk_venv
from support.servers import ProcessServer, http_subprocess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notes_extension.py"
SDK_CLIENT = PEERS / "sdk_extension_client.py"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessServer]:
    with http_subprocess(tmp_path_factory.mktemp("notes-sdk"), EXAMPLE) as running:
        yield running


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_sdk_client_calls_custom_methods(served: ProcessServer, mode: str, version: str) -> None:
    python = sdk_venv.sdk_python()
    done = subprocess.run(
        [str(python), str(SDK_CLIENT), served.url, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["protocol"] == version
    assert got["note"]["text"] == "sdk" and got["note"]["tags"] == ["sdk"]
    assert got["added"] == [got["note"]["id"]]
    assert "sdk" in got["found"]
