"""The ``[serverless]`` extra is optional, and the examples under examples/serverless/ run.

Without mangum/functions-framework ``import mcpkit.serverless`` still works and costs
neither; calling an adapter says in one line which extra to install.  The examples run as
a user runs them: the Lambda one as a script, the Cloud Function one under
functions-framework in a subprocess, with an MRTR round trip over real HTTP.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from support.servers import free_port, kill_group, spawn, wait_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "serverless"
ENV = {**os.environ, "MCPKIT_SEALING_KEYS": "example-key"}

BLOCKED = """
import sys
sys.modules["mangum"] = None
sys.modules["functions_framework"] = None
sys.modules["functions_framework.aio"] = None
import mcpkit.serverless as sl
from mcpkit import Server
server = Server("x")
for adapter in (sl.lambda_handler, sl.cloud_function_handler):
    try:
        adapter(server)
    except ModuleNotFoundError as exc:
        print(exc)
"""


def test_adapters_name_the_extra_when_it_is_missing() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED], capture_output=True, text=True, env=ENV, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "mcpkit.serverless.lambda_handler needs the 'serverless' extra "
        "(missing module 'mangum'): pip install 'mcpkit[serverless]'",
        "mcpkit.serverless.cloud_function_handler needs the 'serverless' extra "
        "(missing module 'functions_framework'): pip install 'mcpkit[serverless]'",
    ]


def test_importing_the_module_imports_neither_platform_library() -> None:
    code = (
        "import sys, mcpkit.serverless\n"
        "print(sorted({'mangum', 'functions_framework', 'flask'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_lambda_example_runs() -> None:
    pytest.importorskip("mangum")
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "lambda_function.py")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "200 hello from Lambda"


def test_cloud_function_example_mrtr_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("functions_framework.aio")
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "functions-framework"), "--target", "mcp"]
    cmd += ["--source", "main.py", "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "out.log"
    proc = spawn(cmd, log, env={**ENV, "WORKERS": "1"}, cwd=EXAMPLE)
    try:
        wait_port(port, proc, log)
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }
        params = {"name": "confirm_delete", "arguments": {"path": "a.txt"}, "_meta": meta}
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "confirm_delete",
        }
        url = f"http://127.0.0.1:{port}/mcp"
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        asked = httpx.post(url, json=body, headers=headers, timeout=30).json()["result"]
        assert asked["resultType"] == "input_required"
        params = {
            **params,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
            "requestState": asked["requestState"],
        }
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        done = httpx.post(url, json=body, headers=headers, timeout=30).json()["result"]
        assert done["content"][0]["text"] == "deleted a.txt"
    finally:
        kill_group(proc, grace=10.0)


def test_cloud_run_example_under_uvicorn(tmp_path: Path) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "cloud_run:app", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--no-access-log"]
    log = tmp_path / "out.log"
    proc = spawn(cmd, log, env=ENV, cwd=EXAMPLE)
    try:
        wait_port(port, proc, log)
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "run"}, "_meta": meta},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        url = f"http://127.0.0.1:{port}/mcp"
        reply = httpx.post(url, json=body, headers=headers, timeout=30)
        assert reply.json()["result"]["content"][0]["text"] == "run"
        run_host = {**headers, "host": "mcp-abc123-uc.a.run.app"}
        assert httpx.post(url, json=body, headers=run_host, timeout=30).status_code == 200
        evil = {**headers, "host": "evil.example"}
        assert httpx.post(url, json=body, headers=evil, timeout=30).status_code == 403
    finally:
        kill_group(proc, grace=10.0)
