"""Test a server the way its clients will meet it: in memory, over stdio, over HTTP.

    pytest examples/test_quickstart.py        # mcpkit's pytest plugin is loaded automatically

``Client(server)`` runs the real protocol in memory (every message encoded and decoded,
``initialize`` for legacy, MRTR rounds for 2026-07-28) in milliseconds, so most tests of
a server's behaviour need no process.  The ``mcp_client`` fixture of the ``mcpkit`` pytest
plugin connects to the ``mcp_server`` you define; parametrize ``mcp_transport`` and
``mcp_era`` to run the same test on every transport and protocol era.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import server

from mcpkit.client import Client
from mcpkit.testing import ScriptedResponder, assert_valid_result

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the HTTP case runs uvicorn in the test's event loop


@pytest.fixture
def mcp_server() -> Any:
    return server


class Sum(TypedDict):
    a: float
    b: float
    sum: float


async def test_add_in_memory() -> None:
    async with Client(server) as client:  # a Server object: the in-memory transport
        result = await client.call_tool("add", {"a": 2, "b": 3}, result_type=Sum)
    assert result.data == {"a": 2.0, "b": 3.0, "sum": 5.0}


@pytest.mark.parametrize("mcp_transport", ["memory", "stdio", "http"])
@pytest.mark.parametrize("mcp_era", ["modern", "legacy"])
async def test_every_transport_and_era(mcp_client: Client) -> None:
    result = await mcp_client.call_tool("add", {"a": 1, "b": 2})
    assert_valid_result("tools/call", dict(result), mcp_client.protocol_version)
    assert result.data["sum"] == 3.0


@pytest.fixture
def user() -> ScriptedResponder:
    """A scripted user: answers the server's questions in order, records what it was asked."""
    return ScriptedResponder(elicitation=[{"name": "Ada"}])


@pytest.fixture
def mcp_client_options(user: ScriptedResponder) -> dict[str, Any]:
    return user.callbacks()  # the client declares exactly the capabilities scripted


@pytest.mark.parametrize("mcp_era", ["modern", "legacy"])
async def test_greet_asks_for_a_name(mcp_client: Client, user: ScriptedResponder) -> None:
    result = await mcp_client.call_tool("greet", raise_on_error=True)
    assert result["content"][0]["text"] == "Hello, Ada!"
    assert [params["message"] for params in user.asked("elicitation")] == ["What is your name?"]
    user.assert_done()
