"""mcpkit.serverless.cloud_function_handler served by functions-framework, as Google runs it.

``functions-framework --target mcp`` in a subprocess on 127.0.0.1 (its ASGI mode, chosen
because the adapter registers the function as an ASGI one), with the conformance fixture
server as the function; then the official conformance suite's 2026-07-28 requirements run
against it over real HTTP.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.servers import free_port, kill_group, spawn, wait_port

pytest.importorskip("functions_framework.aio")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "conformance"))
BIN = Path(sys.executable).parent / "functions-framework"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Function:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url, self.process, self.log = url, process, log

    def output_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="module")
def function(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Function]:
    port = free_port()
    log = tmp_path_factory.mktemp("function") / "output.log"
    cmd = [str(BIN), "--target", "mcp", "--source", str(HERE / "cloud_function_target.py")]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    env = {"MCPKIT_SEALING_KEYS": "cloud-function-test-key", "WORKERS": "1"}
    process = spawn(cmd, log, env=env, cwd=HERE)
    fn = Function(f"http://127.0.0.1:{port}/mcp", process, log)
    try:
        try:
            wait_port(port, process, log)
        except RuntimeError as exc:
            pytest.fail(f"functions-framework: {exc}")
        yield fn
    finally:
        kill_group(process, grace=10.0)


def _post(url: str, method: str, params: dict[str, object], **extra: str) -> httpx.Response:
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        **extra,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    return httpx.post(url, json=body, headers=headers, timeout=30)


def test_tools_call_through_functions_framework(function: Function) -> None:
    reply = _post(
        function.url,
        "tools/call",
        {"name": "test_simple_text", "arguments": {}},
        **{"mcp-name": "test_simple_text"},
    )
    assert reply.status_code == 200, function.output_tail()
    assert reply.json()["result"]["content"][0]["type"] == "text"


def test_any_path_of_the_function_is_the_endpoint(function: Function) -> None:
    root = function.url.removesuffix("/mcp") + "/"
    reply = _post(root, "server/discover", {})
    assert reply.status_code == 200
    assert "2026-07-28" in reply.json()["result"]["supportedVersions"]


def test_listen_streams_on_cloud_functions(function: Function) -> None:
    """Unlike Lambda, Cloud Functions 2nd gen streams responses: listen is served."""
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen",
    }
    with httpx.stream("POST", function.url, json=body, headers=headers, timeout=30) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("data:"):
                first = json.loads(line[5:])
                break
    assert first["method"] == "notifications/subscriptions/acknowledged"


def test_foreign_host_is_refused(function: Function) -> None:
    reply = _post(function.url, "server/discover", {}, host="evil.example")
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == -32600


@pytest.mark.conformance
@pytest.mark.skipif(shutil.which("node") is None, reason="the conformance harness needs node")
def test_conformance_2026_07_28(function: Function, tmp_path: Path) -> None:
    from harness import run_server_suite

    result = run_server_suite(function.url, requirements="2026-07-28", output_dir=tmp_path)
    assert result.failed == 0 and result.passed >= 37, result.summary()
