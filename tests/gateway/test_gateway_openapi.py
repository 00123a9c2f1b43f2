"""``kind = "openapi"`` upstreams: a REST API (a FastAPI app served by uvicorn on
127.0.0.1) behind the gateway next to an MCP upstream, over real HTTP, with the gateway's
rules applying to its tools like to any other upstream's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gwkit
import httpx
import pytest

from mcpkit.gateway.config import ConfigError, parse_config

pytest.importorskip("fastapi")

RULES = """
[[rule]]
name = "no-resets"
effect = "deny"
methods = ["tools/call"]
names = ["shop_reset"]
"""


@pytest.fixture(scope="module")
def gateway(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    port = gwkit.free_port()
    cmd = [sys.executable, "-m", "uvicorn", "--app-dir", "tests/compose/servers"]
    cmd += ["shop_api:app", "--host", "127.0.0.1", "--port", str(port)]
    api = gwkit._spawn("shop-api", cmd, log_dir, {}, port)
    stack.append(api)
    gwkit.wait_port(api)
    # A spec file next to the config, named relative to it.
    document = httpx.get(f"{api.base}/openapi.json", timeout=10).json()
    (log_dir / "shop.json").write_text(json.dumps(document))
    a = gwkit.start_upstream("a", log_dir)
    stack.append(a)
    config = (
        gwkit.toml_upstream("a", url=a.url, prefix="a_")
        + '[[upstream]]\nname = "shop"\nkind = "openapi"\nspec = "shop.json"\n'
        + f'base_url = "{api.base}"\nprefix = "shop_"\n'
        + 'headers = { "x-api-key" = "from-the-config" }\n'
        + RULES
    )
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


def test_the_api_operations_are_tools_next_to_the_mcp_upstreams(gateway: gwkit.Proc) -> None:
    names = {t["name"] for t in gwkit.call(gateway.url, "tools/list").result["tools"]}
    assert {"shop_get_item", "shop_list_items", "shop_create_item", "shop_order"} <= names
    assert "a_whoami" in names


def test_a_call_reaches_the_api_and_its_answer_comes_back(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(
        gateway.url, "tools/call", {"name": "shop_get_item", "arguments": {"item_id": 1}}
    )
    assert gwkit.structured(reply)["name"] == "hammer"
    created = gwkit.call(
        gateway.url,
        "tools/call",
        {
            "name": "shop_create_item",
            "arguments": {
                "name": "kite",
                "category": "toys",
                "size": {"width": 50, "height": 60},
            },
        },
    )
    assert gwkit.structured(created)["name"] == "kite"
    # The configured headers go to the API (and the caller's token never does).
    echoed = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "shop_echo", "arguments": {"x_source": "gw"}},
        headers={"authorization": "Bearer the-callers-own"},
    )
    assert gwkit.structured(echoed) == {
        "source": "gw",
        "session": None,
        "api_key": "from-the-config",
        "authorization": None,
    }


def test_an_api_error_is_a_tool_error_with_its_status(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "shop_order", "arguments": {"item_id": 1, "quantity": 5}},
    )
    assert reply.result["isError"] is True
    assert "422" in reply.text()


def test_the_gateway_rules_apply_to_api_tools(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(gateway.url, "tools/call", {"name": "shop_reset", "arguments": {}})
    assert reply.status == 403
    assert reply.error["code"] == -31003


def test_an_openapi_upstream_needs_a_spec_and_no_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="spec must name"):
        parse_config({"upstream": [{"name": "api", "kind": "openapi"}]}, tmp_path)
    with pytest.raises(ConfigError, match="no such file"):
        parse_config({"upstream": [{"name": "api", "kind": "openapi", "spec": "x.json"}]}, tmp_path)
    with pytest.raises(ConfigError, match="not url or command"):
        parse_config(
            {"upstream": [{"name": "api", "kind": "openapi", "spec": "x", "url": "http://h"}]},
            tmp_path,
        )
    with pytest.raises(ConfigError, match="kind must be"):
        parse_config({"upstream": [{"name": "api", "kind": "grpc"}]}, tmp_path)
