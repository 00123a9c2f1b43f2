"""Virtual servers: ``[[server]]`` endpoints exposing a chosen subset of the merged lists,
over real HTTP (both eras) against a gateway process with two echo upstreams."""

from __future__ import annotations

from pathlib import Path

import gwkit
import pytest

from mcpkit.gateway.config import ConfigError, parse_config

SERVER = """
[[server]]
name = "support"
path = "/mcp/support"
tools = ["a_whoami", "b_nap"]
prompts = ["b_*"]
resources = ["echo://a/*"]
"""


@pytest.fixture(scope="module")
def gateway(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    a, b = gwkit.start_upstreams(log_dir, ("a",), ("b",))
    stack.extend([a, b])
    config = (
        '[gateway]\nstate = "memory:"\n'
        + SERVER
        + gwkit.toml_upstream("a", url=a.url, prefix="a_")
        + gwkit.toml_upstream("b", url=b.url, prefix="b_")
    )
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


def support(gw: gwkit.Proc) -> str:
    return gw.base + "/mcp/support"


def names(url: str, method: str, member: str, key: str = "name") -> set[str]:
    return {item[key] for item in gwkit.call(url, method).result[member]}


def test_the_virtual_server_lists_only_its_subset(gateway: gwkit.Proc) -> None:
    assert names(support(gateway), "tools/list", "tools") == {"a_whoami", "b_nap"}
    assert names(support(gateway), "prompts/list", "prompts") == {"b_greeting"}
    assert names(support(gateway), "resources/list", "resources", "uri") == {"echo://a/info"}
    templates = names(
        support(gateway), "resources/templates/list", "resourceTemplates", "uriTemplate"
    )
    assert templates == {"echo://a/items/{id}"}
    everything = names(gateway.url, "tools/list", "tools")
    assert {"a_whoami", "b_whoami", "a_nap", "b_nap"} <= everything  # /mcp: unchanged


def test_calls_outside_the_subset_are_unknown_there(gateway: gwkit.Proc) -> None:
    url = support(gateway)
    assert gwkit.call(url, "tools/call", {"name": "a_whoami"}).text() == "a"
    other = gwkit.call(url, "tools/call", {"name": "b_whoami"})
    assert other.error["code"] == -32602 and "b_whoami" in other.error["message"]
    assert gwkit.call(gateway.url, "tools/call", {"name": "b_whoami"}).text() == "b"
    read = gwkit.call(url, "resources/read", {"uri": "echo://b/info"})
    assert read.error["code"] == -32602
    assert (
        gwkit.call(url, "resources/read", {"uri": "echo://a/items/3"}).result["contents"][0]["text"]
        == "item 3 of a"
    )


def test_a_legacy_client_sees_the_same_subset(gateway: gwkit.Proc) -> None:
    session = gwkit.LegacySession(support(gateway))
    try:
        assert session.initialize().status == 200
        tools = {t["name"] for t in session.request("tools/list").result["tools"]}
        assert tools == {"a_whoami", "b_nap"}
        refused = session.request("tools/call", {"name": "a_nap", "arguments": {}})
        assert refused.error["code"] == -32602
    finally:
        session.close()


@pytest.mark.parametrize(
    ("server", "complaint"),
    [
        ({"name": "x", "path": "/metrics"}, "reserved"),
        ({"name": "x", "path": "no-slash"}, "URL path"),
        ({"name": "x y", "path": "/mcp/x"}, "name must match"),
    ],
)
def test_virtual_server_mistakes_are_named(server: dict[str, str], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        parse_config({"upstream": [{"name": "a", "url": "http://x/mcp"}], "server": [server]})
    twice = [{"name": "x", "path": "/mcp/x"}, {"name": "y", "path": "/mcp/x/"}]
    with pytest.raises(ConfigError, match="another"):
        parse_config({"upstream": [{"name": "a", "url": "http://x/mcp"}], "server": twice})


def test_a_reload_may_change_what_a_virtual_server_shows_but_not_its_path(
    tmp_path: Path,
) -> None:
    from mcpkit.gateway.config import load_config
    from mcpkit.gateway.reload import prepare

    up = '[[upstream]]\nname = "a"\nurl = "http://127.0.0.1:9/mcp"\n'
    first = tmp_path / "first.toml"
    first.write_text(up + '[[server]]\nname = "s"\npath = "/mcp/s"\ntools = ["a_x"]\n')
    current = load_config(first)
    changed = tmp_path / "changed.toml"
    changed.write_text(up + '[[server]]\nname = "s"\npath = "/mcp/s"\ntools = ["a_*"]\n')
    assert prepare(current, changed).config.servers[0].tools == ("a_*",)
    moved = tmp_path / "moved.toml"
    moved.write_text(up + '[[server]]\nname = "s"\npath = "/mcp/elsewhere"\n')
    with pytest.raises(ConfigError, match="cannot change while running"):
        prepare(current, moved)
