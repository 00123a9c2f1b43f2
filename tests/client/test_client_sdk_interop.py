"""Our client against a server that is not ours: the official MCP Python SDK (``mcp``).

The SDK is installed from PyPI into a virtualenv of its own, cached in
``~/.cache/mcpkit-tests/`` (override: ``MCPKIT_TEST_CACHE``) so reruns are fast, and the
server script ``peers/sdk_server.py`` runs with that interpreter over stdio and Streamable
HTTP.  Without PyPI the test is skipped with the reason, except under CI (``CI=true``),
where a missing interop test is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from clientkit import PEERS, ServerProcess, start_server

from mcpkit.client import Client, ElicitResult, prompt_ref
from mcpkit.types.versions import EraChoice
from support import sdk_venv
from support.servers import free_port

pytestmark = pytest.mark.anyio

SDK_SERVER = PEERS / "sdk_server.py"


@pytest.fixture(scope="session")
def sdk_python() -> str:
    """The SDK's interpreter (``support/sdk_venv.py``: installed once, cached)."""
    return str(sdk_venv.sdk_python())


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
async def test_sdk_server(sdk_target: Any, era: EraChoice) -> None:
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
