"""Our client against a server that is not ours: the official MCP Python SDK (``mcp``).

The SDK is installed from PyPI into a virtualenv of its own, cached in
``~/.cache/mcpkit-tests/`` (override: ``MCPKIT_TEST_CACHE``) so reruns are fast, and the
server script ``peers/sdk_server.py`` runs with that interpreter over stdio and Streamable
HTTP.  Without PyPI the test is skipped with the reason, except under CI (``CI=true``),
where a missing interop test is a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from client_support import PEERS, ServerProcess, start_server

from mcpkit.client import Client, ElicitResult, prompt_ref
from support.servers import free_port

try:
    import fcntl
except ImportError:  # Windows: installs are not serialized there
    fcntl = None  # type: ignore[assignment]

pytestmark = pytest.mark.anyio

SDK_VERSION = "2.3.0"
CACHE = Path(os.environ.get("MCPKIT_TEST_CACHE") or Path.home() / ".cache" / "mcpkit-tests")
VENV = CACHE / f"sdk-mcp-{SDK_VERSION}"
SDK_SERVER = PEERS / "sdk_server.py"


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".sdk-install.lock", "w") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _install() -> str | None:
    """Create the venv and pip install the SDK; the problem in words, or None."""
    if VENV.exists():
        shutil.rmtree(VENV)  # a half-finished earlier attempt
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
    proc = subprocess.run(
        [
            str(_venv_python()),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"mcp=={SDK_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else f"pip exited with {proc.returncode}"
    return None


@pytest.fixture(scope="session")
def sdk_python() -> str:
    marker = VENV / ".installed"
    if not marker.exists():
        with _install_lock():
            if not marker.exists():
                try:
                    problem = _install()
                except (OSError, subprocess.SubprocessError) as exc:
                    problem = str(exc)
                if problem is not None:
                    why = f"cannot install mcp=={SDK_VERSION} from PyPI: {problem}"
                    if os.environ.get("CI", "").lower() == "true":
                        pytest.fail(f"{why} (CI=true: the interop test must run)")
                    pytest.skip(why)
                marker.write_text(SDK_VERSION)
    return str(_venv_python())


@pytest.fixture(scope="module")
def sdk_http_server(
    sdk_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    port = free_port()
    server = start_server(
        [sdk_python, str(SDK_SERVER), "--http", "--port", str(port)],
        port,
        f"http://127.0.0.1:{port}/mcp",
        tmp_path_factory.mktemp("sdk-server") / "log.txt",
    )
    yield server
    server.stop()


@pytest.fixture(params=["stdio", "http"])
def sdk_target(request: pytest.FixtureRequest, sdk_python: str) -> Any:
    if request.param == "stdio":
        return [sdk_python, str(SDK_SERVER)]
    return request.getfixturevalue("sdk_http_server").url


async def ask(params: dict[str, Any]) -> ElicitResult:
    assert params["message"] == "What is your name?"
    assert params["requestedSchema"]["properties"]["name"]["type"] == "string"
    return {"action": "accept", "content": {"name": "Grace"}}


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_sdk_server(sdk_target: Any, era: str) -> None:
    with anyio.fail_after(60):
        async with Client(sdk_target, era=era, elicitation=ask) as client:
            expected = "modern" if era == "auto" else "legacy"
            assert client.era == expected, "the SDK speaks both eras; auto must find modern"
            assert client.server_info.implementation == {
                "name": "interop-sdk-server",
                "version": "9.9.9",
            }
            names = [tool["name"] for tool in await client.list_tools()]
            assert names == ["add", "shout", "ask_name", "ask_name_legacy"]
            added = await client.call_tool("add", {"a": 2, "b": 40})
            assert added["content"] == [{"type": "text", "text": "42"}]
            assert added.get("structuredContent") == {"result": 42}
            shouted = await client.call_tool("shout", {"text": "héllo"})
            assert shouted["content"][0]["text"] == "HÉLLO"

            # Asking the user: MRTR with request state (modern) / elicitation/create (legacy).
            tool = "ask_name" if expected == "modern" else "ask_name_legacy"
            greeted = await client.call_tool(tool)
            assert greeted["content"][0]["text"] == "Hello, Grace!"

            resources = await client.list_resources()
            assert [r["uri"] for r in resources] == ["interop://greeting"]
            greeting = await client.read_resource("interop://greeting")
            assert greeting["contents"][0]["text"] == "hello from the SDK"
            templates = await client.list_resource_templates()
            assert templates[0]["uriTemplate"] == "interop://items/{item_id}"
            item = await client.read_resource("interop://items/7")
            assert item["contents"][0]["text"] == '{"id": "7"}'

            prompts = await client.list_prompts()
            assert prompts[0]["name"] == "review"
            prompt = await client.get_prompt("review", {"code": "x = 1", "language": "rust"})
            assert (
                prompt["messages"][0]["content"]["text"] == "Please review this rust code:\nx = 1"
            )
            completion = await client.complete(prompt_ref("review"), "language", "p")
            assert completion["completion"]["values"] == ["python", "pascal", "perl"]
            await client.ping()
            # Modern: a real subscriptions/listen.  Legacy: emulated from the handshake's
            # capabilities, where the SDK announces tools.listChanged = false.
            async with client.listen(tools=True) as subscription:
                honoured = {"toolsListChanged": True} if expected == "modern" else {}
                assert subscription.filter == honoured
