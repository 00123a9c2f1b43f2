"""The host reaches a 2024-11-05 HTTP+SSE server: an ``mcpServers`` entry with
``"type": "sse"`` (rejected before), here the official SDK's ``sse_app()`` on a real socket."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpkit.host import Host, HostConfig, Permission
from mcpkit.host.config import ConfigError, parse_server
from mcpkit.transports.client_sse import SseTransport

pytestmark = pytest.mark.anyio

CLIENT_TESTS = Path(__file__).resolve().parents[1] / "client"
sys.path.insert(0, str(CLIENT_TESTS))
from clientkit import ServerProcess, start_server  # noqa: E402

from support.sdk_venv import sdk_python  # noqa: E402
from support.servers import free_port  # noqa: E402


@pytest.fixture
def sse_url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    argv = [
        str(sdk_python()),
        str(CLIENT_TESTS / "peers" / "sdk_server.py"),
        "--sse",
        "--port",
        str(port),
    ]
    server: ServerProcess = start_server(
        argv, port, f"http://127.0.0.1:{port}/sse", tmp_path / "log.txt"
    )
    yield server.url
    server.stop()


async def test_an_sse_entry_is_connected_with_the_http_sse_transport(sse_url: str) -> None:
    config = HostConfig(
        servers=(parse_server("old", {"type": "sse", "url": sse_url}),),
        default_permission=Permission.ALLOW,
    )
    assert config.servers[0].transport == "sse"
    async with Host(config) as host:
        assert host.servers["old"].state == "ready"
        client = host.servers["old"].client
        assert client is not None
        assert isinstance(client.transport, SseTransport)
        assert client.era == "legacy"
        names = {tool.qualified_name for tool in await host.list_tools()}
        assert {"old__add", "old__shout"} <= names
        result = await host.call_tool("old__shout", {"text": "legacy"})
        assert result["content"][0]["text"] == "LEGACY"


def test_sse_entries_need_a_url() -> None:
    with pytest.raises(ConfigError, match="type sse needs a url"):
        parse_server("old", {"type": "sse", "command": "python server.py"})
    with pytest.raises(ConfigError, match="not supported"):
        parse_server("old", {"type": "websocket", "url": "http://127.0.0.1:1/ws"})
