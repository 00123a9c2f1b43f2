"""The shipped gateway configs run as the README runs them.

``examples/gateway.toml`` is started as ``.venv/bin/mcpkit gateway examples/gateway.toml``
from the repository root with a ``PATH`` that does not contain the venv (a fresh clone,
venv not activated): its stdio upstreams say ``mcpkit serve ...`` and must still start,
with the gateway's own interpreter.  ``examples/gateway-oauth.toml`` is run against the
local test authorization server, and mcpkit's OAuth client logs in through it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import gwkit
import httpx

sys.path.insert(0, str(gwkit.ROOT / "tests" / "auth"))
from authkit import LocalAuthorizationServer

from mcpkit.auth.client import HeadlessRedirectHandler, OAuthClientAuth, UrlPolicy
from mcpkit.client import Client
from mcpkit.gateway.config import load_config
from support.servers import serve_app

BARE_PATH = "/usr/local/bin:/usr/bin:/bin"
LOCAL = UrlPolicy.local_development()


def start_example(
    name: str, config: str, log_dir: Path, stack: list[gwkit.Proc], **env: str
) -> gwkit.Proc:
    launcher = Path(sys.executable).parent / "mcpkit"  # the venv's console script
    assert launcher.exists(), launcher
    assert str(launcher.parent) not in BARE_PATH.split(":")
    port = gwkit.free_port()
    cmd = [str(launcher), "gateway", f"examples/{config}", "--port", str(port)]
    # _spawn merges os.environ; the PATH given here replaces the inherited one.
    env = {"PATH": BARE_PATH, "VIRTUAL_ENV": "", **env}
    gw = gwkit._spawn(name, cmd, log_dir, env, port)
    stack.append(gw)
    gwkit.wait_port(gw)
    gwkit.wait_healthy_gateway(gw, timeout=60)
    return gw


def test_bare_commands_resolve_to_the_gateways_interpreter() -> None:
    config = load_config(gwkit.ROOT / "examples" / "gateway.toml")
    for upstream in config.upstreams:
        assert upstream.command[:3] == (sys.executable, "-m", "mcpkit"), upstream.command


def test_the_example_serves_its_tools_without_an_activated_venv(
    log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    gw = start_example("example", "gateway.toml", log_dir, stack)
    ready = httpx.get(gw.base + "/readyz").json()
    assert ready["upstreams"] == {"demo": "up", "jobs": "up"}, ready
    listed = gwkit.call(gw.url, "tools/list", token="dev-token-alice")
    names = {t["name"] for t in listed.result["tools"]}
    assert {"demo_add", "demo_echo", "jobs_render_report", "jobs_basket_create"} <= names
    added = gwkit.call(
        gw.url,
        "tools/call",
        {"name": "demo_add", "arguments": {"a": 2, "b": 3}},
        token="dev-token-alice",
    )
    assert gwkit.structured(added)["sum"] == 5
    denied = gwkit.call(gw.url, "tools/call", {"name": "jobs_basket_create"}, token="dev-token-bob")
    assert denied.status == 403  # the example's [[rule]]
    huge = gwkit.call(
        gw.url,
        "tools/call",
        {"name": "jobs_render_report", "arguments": {"pages": 500}},
        token="dev-token-alice",
    )
    assert huge.status == 403 and "no-huge-reports" in huge.error["message"]  # its CEL rule
    shop = gwkit.call(gw.base + "/mcp/shop", "tools/list", token="dev-token-alice")
    assert {t["name"] for t in shop.result["tools"]} == {
        "jobs_basket_create",
        "jobs_basket_add",
        "jobs_basket_view",
        "jobs_basket_destroy",
    }  # its virtual server


def test_a_top_level_key_of_the_example_is_not_a_bearer_token(
    log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    # `default_effect = ...` written below [auth.tokens] would be a token for principal
    # "allow"; the strict loader refuses that file, and the shipped one has it on top.
    gw = start_example("example-keys", "gateway.toml", log_dir, stack)
    assert gwkit.call(gw.url, "tools/list", token="default_effect").status == 401
    assert gwkit.call(gw.url, "tools/list", token="dev-token-bob").status == 200


def test_the_oauth_example_logs_a_client_in(log_dir: Path, stack: list[gwkit.Proc]) -> None:
    with serve_app(lambda base: LocalAuthorizationServer(base)) as (issuer, authz):
        port = gwkit.free_port()
        base = f"http://127.0.0.1:{port}"
        launcher = Path(sys.executable).parent / "mcpkit"
        cmd = [str(launcher), "gateway", "examples/gateway-oauth.toml", "--port", str(port)]
        env = {"PATH": BARE_PATH, "OAUTH_ISSUER": issuer, "GATEWAY_URL": base}
        gw = gwkit._spawn("oauth-example", cmd, log_dir, env, port)
        stack.append(gw)
        gwkit.wait_port(gw)
        gwkit.wait_healthy_gateway(gw, timeout=60)
        auth = OAuthClientAuth(
            redirect_handler=HeadlessRedirectHandler(
                "http://127.0.0.1:53682/callback", policy=LOCAL
            ),
            policy=LOCAL,
        )

        async def calls() -> tuple[Any, Any]:
            async with Client(gw.url, auth=auth) as client:
                added = await client.call_tool("add", {"a": 1, "b": 2})
                echoed = await client.call_tool("echo", {"text": "hi"})  # needs mcp:admin
            return added, echoed

        added, echoed = anyio.run(calls)
        assert added["structuredContent"]["sum"] == 3
        assert echoed["content"][0]["text"] == "hi"
        asked = [p for _, path, p in authz.log if path == "/authorize"]
        assert len(asked) == 2  # login, then the step-up for echo
        gw.stop()


def test_the_apps_example_shares_the_front_and_routes_the_apps_calls(
    log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    gw = start_example("apps", "gateway-apps.toml", log_dir, stack)
    names = {t["name"] for t in gwkit.call(gw.url, "tools/list").result["tools"]}
    assert {"add", "echo", "dice_roll_dice", "dice_roll_history"} <= names
    added = gwkit.call(gw.url, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert gwkit.structured(added)["sum"] == 5
    view = gwkit.call(gw.url, "resources/read", {"uri": "ui://dice/roller.html"})
    assert "roll_history" in view.result["contents"][0]["text"]
    # The view's own call, as it wrote it: served by the dice upstream.
    rolled = gwkit.call(gw.url, "tools/call", {"name": "roll_dice", "arguments": {"count": 2}})
    assert len(gwkit.structured(rolled)["rolls"]) == 2
    many = gwkit.call(gw.url, "tools/call", {"name": "roll_dice", "arguments": {"count": 8}})
    assert many.status == 403 and "at-most-five-dice" in many.error["message"]
    history = gwkit.call(gw.url, "tools/call", {"name": "roll_history"})
    assert gwkit.structured(history)["totals"] == [sum(gwkit.structured(rolled)["rolls"])]
