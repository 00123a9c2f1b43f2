"""The host with an HTTP server (``x-mcp-header`` handling), and ``mcpkit host`` in a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostkit import SERVERS, calls, trusted_env

from mcpkit.host import Host, HostConfig, Permission, ServerConfig
from support.servers import free_port, kill_group, spawn, wait_http

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gamma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("gamma") / "gamma.log"
    proc = spawn(
        [
            sys.executable,
            "-m",
            "mcpkit.cli.main",
            "serve",
            str(SERVERS / "gamma.py"),
            "--http",
            "--port",
            str(port),
            "--state",
            "memory:",
        ],
        log,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_http(url, proc, log)
        yield url
    finally:
        kill_group(proc, grace=10.0)


async def test_http_server_with_mcp_param_headers(gamma_url: str) -> None:
    config = HostConfig(
        servers=(ServerConfig("gamma", url=gamma_url),), default_permission=Permission.ALLOW
    )
    async with Host(config) as host:
        assert host.servers["gamma"].state == "ready"
        names = [t.qualified_name for t in await host.list_tools()]
        assert names == ["gamma__lookup"]  # bad_header dropped: invalid x-mcp-header on HTTP
        assert "bad_header" in host.dropped["gamma"]
        schema = host.tool("gamma__lookup").schema  # type: ignore[union-attr]
        assert schema["properties"]["region"] == {"type": "string"}  # annotation not for models
        result = await host.call_tool("gamma__lookup", {"region": "eu", "query": "tea"})
        assert result["content"][0]["text"] == "eu: tea"


def test_terminal_host_with_consent_prompts(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "alpha": {
                "command": sys.executable,
                "args": [str(SERVERS / "alpha.py")],
                "env": {"HOST_TEST_DIR": str(tmp_path)},
            }
        },
        "model": {
            "provider": "scripted",
            "script": [
                {"tool_calls": [{"name": "alpha__write_note", "arguments": {"text": "one"}}]},
                {"text": "Refused, fine."},
                {"tool_calls": [{"name": "alpha__write_note", "arguments": {"text": "two"}}]},
                {"text": "Saved it."},
            ],
        },
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    typed = (
        "\n".join(
            [
                "/tools",
                "note one",
                "n",  # the model asks; the person says no
                "note two",
                "y",  # the model asks again; yes
                '/call alpha__add {"a": 1, "b": 2}',
                "/audit",
                "/quit",
            ]
        )
        + "\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "mcpkit.cli.main", "host", "--config", str(path)],
        input=typed,
        capture_output=True,
        text=True,
        timeout=60,
        env=trusted_env(path, tmp_path),
    )
    out = run.stdout
    assert run.returncode == 0, run.stderr
    assert "alpha: ready" in out and "model: scripted" in out
    assert "alpha__write_note: Append a note" in out
    assert "? The model wants to run write_note on alpha" in out
    assert "the server claims (unverified)" in out
    assert "x The tool call was refused" in out and "model> Refused, fine." in out
    assert "<- saved: two" in out and "model> Saved it." in out
    assert "alpha: 3" in out
    assert "tool alpha__write_note declined by user" in out
    assert calls(tmp_path, "alpha") == ["write_note", "add"]
