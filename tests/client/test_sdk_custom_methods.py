"""Custom methods between mcpkit and the official Python SDK (``mcp``, its own cached venv:
``support/sdk_venv.py``), both ways and in both eras: the SDK's client calling
``examples/notes_extension.py`` over Streamable HTTP (``ClientSession.send_request`` with
request models of its own, a ``NotificationBinding`` for the server's notification), and
mcpkit's client calling an SDK server's ``Extension.methods()`` over stdio."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from clientkit import PEERS

from mcpkit.client import Client, ServerError
from support import sdk_venv
from support.servers import ProcessServer, http_subprocess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notes_extension.py"
SDK_CLIENT = PEERS / "sdk_extension_client.py"


@dataclass
class Echo:
    echo: str
    length: int


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


SDK_SERVER = PEERS / "sdk_extension_server.py"


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_mcpkit_client_calls_an_sdk_servers_custom_method(era: str) -> None:
    """The other way round: the SDK's ``Extension.methods()`` served over stdio, called
    with ``client.request(..., result_type=...)``."""
    python = str(sdk_venv.sdk_python())
    async with Client([python, str(SDK_SERVER)], era=era) as client:  # type: ignore[arg-type]
        declared = client.server_info.capabilities.get("extensions")
        echoed = await client.request("com.example/sdk/echo", {"text": "hey"}, result_type=Echo)
        with pytest.raises(ServerError) as unknown:
            await client.request("com.example/sdk/nope", {})
    assert client.era == era
    assert declared == ({"com.example/sdk": {"flavour": "sdk"}} if era == "modern" else None)
    assert echoed == Echo(echo="hey", length=3)
    assert unknown.value.code == -32601
