"""``Client.from_config``: one client over several servers, as an ``mcpServers`` file says.

Two real stdio servers (the same file, told apart by the ``env`` the config gives them), one
Streamable HTTP server on a real uvicorn socket and one in-memory ``Server`` object, all
behind one client: namespaced list, call, read, prompt and completion; names that lead
nowhere; a server that fails to start; and the host reading the same entries through the
same parser.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from mcpkit import Server
from mcpkit.client import Client, ClientError, ClientGroup, ConfigError, ConnectError
from mcpkit.client.config import ServerConfig, client_options
from mcpkit.client.config import parse_server as parse_entry
from mcpkit.host.config import ServerConfig as HostServerConfig
from mcpkit.host.config import parse_config
from mcpkit.transports.client_stdio import StdioTransport
from mcpkit.transports.http import McpHttpApp
from support.servers import SERVERS_DIR, ThreadServer

CONFIG_SERVER = SERVERS_DIR / "config_server.py"
pytestmark = pytest.mark.anyio


def text_of(result: Any) -> str:
    return "".join(b["text"] for b in result["content"] if b.get("type") == "text")


def memory_server() -> Server:
    server = Server("memory")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Multiply instead, so a result shows which server answered."""
        return a * b

    return server


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    web = Server("web")

    @web.tool()
    def shout(text: str) -> str:
        return text.upper()

    @web.resource("docs://guide")
    def guide() -> str:
        return "the web guide"

    with ThreadServer(McpHttpApp(web)) as running:
        yield running.url


def config(tmp_path: Path, http_url: str, **extra: Any) -> dict[str, Any]:
    def stdio(role: str) -> dict[str, Any]:
        return {
            "command": "python",
            "args": [str(CONFIG_SERVER)],
            "cwd": str(tmp_path),
            "env": {"ROLE": "${FROM_CONFIG_ROLE}-" + role},
        }

    return {
        "mcpServers": {"alpha": stdio("a"), "beta": stdio("b"), "web": {"url": http_url}, **extra}
    }


@pytest.fixture
async def group(
    tmp_path: Path, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ClientGroup]:
    monkeypatch.setenv("FROM_CONFIG_ROLE", "r")
    cfg = config(tmp_path, http_url, memory=memory_server())
    async with Client.from_config(cfg) as client:
        yield client


async def test_namespaced_tools_from_four_servers(group: ClientGroup) -> None:
    names = {t["name"] for t in await group.list_tools()}
    assert {
        "alpha__add",
        "alpha__whoami",
        "beta__add",
        "beta__whoami",
        "web__shout",
        "memory__add",
    } == names
    # Each call reaches its own server: same tool name, different processes and objects.
    assert text_of(await group.call_tool("alpha__whoami")) == "r-a"
    assert text_of(await group.call_tool("beta__whoami")) == "r-b"
    assert text_of(await group.call_tool("alpha__add", {"a": 2, "b": 3})) == "5"
    assert text_of(await group.call_tool("memory__add", {"a": 2, "b": 3})) == "6"
    assert text_of(await group.call_tool("web__shout", {"text": "hi"})) == "HI"
    # Each server keeps its own client (and era, session, transport).
    assert group.client("alpha").transport.kind == "stdio"
    assert group.client("web").transport.kind == "http"


async def test_namespaced_resources_templates_and_reads(group: ClientGroup) -> None:
    uris = {r["uri"] for r in await group.list_resources()}
    assert {"data://alpha/readme", "data://beta/readme", "docs://web/guide"} <= uris
    templates = {t["uriTemplate"] for t in await group.list_resource_templates()}
    assert {"data://alpha/items/{item}", "data://beta/items/{item}"} <= templates
    read = await group.read_resource("data://beta/readme")
    assert read["contents"][0]["text"] == "readme of r-b"
    assert read["contents"][0]["uri"] == "data://readme"  # the server's own URI
    item = await group.read_resource("data://alpha/items/42")
    assert item["contents"][0]["text"] == "r-a item 42"
    assert (await group.read_resource("docs://web/guide"))["contents"][0]["text"] == "the web guide"


async def test_namespaced_prompts_and_completion(group: ClientGroup) -> None:
    names = {p["name"] for p in await group.list_prompts()}
    assert names == {"alpha__greet", "beta__greet"}  # web and memory have no prompts
    got = await group.get_prompt("beta__greet", {"name": "Ada"})
    assert got["messages"][0]["content"]["text"] == "r-b greets Ada"
    done = await group.complete({"type": "ref/prompt", "name": "alpha__greet"}, "name", "A")
    assert done["completion"]["values"] == ["r-a-A"]
    done = await group.complete(
        {"type": "ref/resource", "uri": "data://beta/items/{item}"}, "item", "4"
    )
    assert done["completion"]["values"] == ["r-b-4"]


async def test_names_that_lead_nowhere(group: ClientGroup) -> None:
    with pytest.raises(ClientError, match="server 'alpha' has none by that name"):
        await group.call_tool("alpha__nope")
    with pytest.raises(ClientError, match="there is no server named 'gamma'"):
        await group.call_tool("gamma__add", {"a": 1, "b": 2})
    with pytest.raises(ClientError, match="tool names here are server__name"):
        await group.call_tool("add", {"a": 1, "b": 2})
    with pytest.raises(ClientError, match="no prompt named 'web__greet'"):
        await group.get_prompt("web__greet")
    with pytest.raises(ClientError, match="names no server"):
        await group.read_resource("data://readme")
    with pytest.raises(ClientError, match="no server named 'gamma'"):
        group.client("gamma")
    # The servers are still fine afterwards.
    assert text_of(await group.call_tool("alpha__add", {"a": 1, "b": 1})) == "2"


async def test_a_server_that_fails_to_start_is_named(
    tmp_path: Path, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FROM_CONFIG_ROLE", "r")
    broken = {"command": "python", "args": ["-c", "import sys; sys.exit(3)"]}
    cfg = config(tmp_path, http_url, broken=broken)
    client = Client.from_config(cfg)
    with pytest.raises(ConnectError) as caught:
        async with client:
            pytest.fail("a group with a broken server must not connect")
    message = str(caught.value)
    assert "server 'broken'" in message and "sys.exit(3)" in message
    assert "exited with code 3" in message
    assert "alpha" not in message and "beta" not in message  # only the culprit is named
    # The servers that did start were closed again: their processes are gone.
    for name in ("alpha", "beta"):
        process = cast(StdioTransport, client.clients[name].transport)._process
        assert process is not None and process.returncode is not None


async def test_a_file_disabled_entries_and_the_era(
    tmp_path: Path, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FROM_CONFIG_ROLE", "f")
    cfg = config(tmp_path, http_url)
    cfg["mcpServers"]["beta"]["era"] = "legacy"
    cfg["mcpServers"]["web"]["disabled"] = True
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(cfg))
    async with Client.from_config(path) as client:
        assert set(client.clients) == {"alpha", "beta"}
        assert client.client("beta").era == "legacy"
        assert client.client("alpha").era == "modern"
        assert text_of(await client.call_tool("beta__whoami")) == "f-b"


def test_configuration_mistakes_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"mcpServers\.x needs exactly one of command"):
        Client.from_config({"mcpServers": {"x": {}}})
    with pytest.raises(
        ConfigError,
        match=r"mcpServers\.x\.env\.K: environment variable "
        r"FROM_CONFIG_UNSET is not set",
    ):
        Client.from_config(
            {"mcpServers": {"x": {"command": "python", "env": {"K": "${FROM_CONFIG_UNSET}"}}}}
        )
    with pytest.raises(ConfigError, match="a server name must match"):
        Client.from_config({"mcpServers": {"a b": memory_server()}})
    with pytest.raises(ConfigError, match="no servers"):
        Client.from_config({"mcpServers": {}})
    with pytest.raises(ConfigError, match=r"missing\.json"):
        Client.from_config(tmp_path / "missing.json")


def test_the_host_reads_the_same_entries_through_the_same_parser() -> None:
    entry = {
        "command": "python",
        "args": ["s.py"],
        "timeout": 5,
        "era": "modern",
        "permission": "allow",
        "tools": {"rm": "deny"},
    }
    common = parse_entry("files", entry)
    hosted = parse_config({"mcpServers": {"files": entry}}).servers[0]
    assert isinstance(hosted, HostServerConfig) and isinstance(hosted, ServerConfig)
    assert hosted.common() == common.common()  # same reach, plus the host's own keys
    assert hosted.permission is not None and hosted.permission.value == "allow"
    assert (
        client_options(hosted)
        == client_options(common)
        == {"timeout": 5.0, "era": "modern", "env": {}, "cwd": None}
    )
