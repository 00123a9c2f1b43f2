"""The gateway as the authorization server its clients sign in with
(``[auth] mode = "authorization_server"``), run from ``examples/gateway-authserver.toml``
as a user runs it: the gateway and its mcpkit upstream are real processes, users sign in at
a GitHub-style provider (OAuth without OpenID Connect), mcpkit's client registers at the
gateway and calls a tool, and a CEL rule on ``jwt.groups`` lets one user through and
refuses another."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import gwkit
import httpx
import pytest

sys.path.insert(0, str(gwkit.ROOT / "tests" / "auth"))
from authkit import Browser, PersonAtTheConsentPage
from github_double import CLIENT_ID, CLIENT_SECRET, GitHubDouble

from mcpkit.auth.client import OAuthClientAuth, UrlPolicy
from mcpkit.auth.client.doctor import diagnose
from mcpkit.client import Client
from mcpkit.gateway.config import ConfigError, parse_config
from mcpkit.types.errors import McpError
from support.servers import ThreadServer, run_mcpkit

pytest.importorskip("joserfc")

EXAMPLE = gwkit.ROOT / "examples" / "gateway-authserver.toml"
LOCAL = UrlPolicy.local_development()
OUTSIDER = {"id": 777, "login": "mallory", "email": "mallory@example.com"}


@pytest.fixture(scope="module")
def github() -> Iterator[tuple[str, GitHubDouble]]:
    double = GitHubDouble()
    with ThreadServer(double) as server:
        yield server.base, double


@pytest.fixture(scope="module")
def gateway(github: tuple[str, GitHubDouble], log_dir: Path) -> Iterator[gwkit.Proc]:
    port = gwkit.free_port()
    env = {
        "GATEWAY_URL": f"http://127.0.0.1:{port}",
        "AUTH_STATE": f"sqlite:///{log_dir / 'authserver.db'}",
        "GITHUB_URL": github[0],
        "GITHUB_API_URL": github[0],
        "GITHUB_CLIENT_ID": CLIENT_ID,
        "GITHUB_CLIENT_SECRET": CLIENT_SECRET,
    }
    cmd = [sys.executable, "-m", "mcpkit", "gateway", str(EXAMPLE), "--port", str(port)]
    gw = gwkit._spawn("authserver-gateway", cmd, log_dir, env, port)
    try:
        gwkit.wait_port(gw)
        gwkit.wait_healthy_gateway(gw, timeout=60)
        yield gw
    finally:
        gw.stop()


def sign_in_and_call(url: str, text: str) -> tuple[dict[str, Any], Browser]:
    """mcpkit's client signs in (a new user agent: a new sign-in) and calls ``echo``."""

    async def run() -> tuple[dict[str, Any], Browser]:
        browser = Browser()
        auth = OAuthClientAuth(redirect_handler=browser, policy=LOCAL, client_name="gw test")
        try:
            async with Client(url, auth=auth) as client:
                return await client.call_tool("echo", {"text": text}), browser
        finally:
            await browser.aclose()

    return anyio.run(run)


def test_a_member_signs_in_at_the_gateway_and_calls_a_tool(
    gateway: gwkit.Proc, github: tuple[str, GitHubDouble]
) -> None:
    result, browser = sign_in_and_call(gateway.url, "through the gateway")
    assert result["content"][0]["text"] == "through the gateway"
    # Signed in at the gateway's own endpoints, the user at the provider.
    assert any(url.startswith(f"{gateway.base}/authorize") for url in browser.visited)
    assert any(url.startswith(f"{github[0]}/login/oauth/authorize") for url in browser.visited)
    assert any(url.startswith(f"{gateway.base}/oauth/callback") for url in browser.visited)


def test_the_cel_rule_on_jwt_groups_refuses_a_user_outside_the_group(
    gateway: gwkit.Proc, github: tuple[str, GitHubDouble]
) -> None:
    double = github[1]
    member, orgs = double.user, double.orgs
    double.user, double.orgs = OUTSIDER, [{"login": "elsewhere"}]
    try:
        with pytest.raises(McpError) as refused:
            sign_in_and_call(gateway.url, "not for mallory")
    finally:
        double.user, double.orgs = member, orgs
    assert "members-only" in str(refused.value)
    assert "/user/orgs" not in str(refused.value)
    audit = gateway.log.read_text()
    assert '"principal": "777"' in audit or '"principal":"777"' in audit


def test_a_token_from_elsewhere_is_refused_with_the_gateways_challenge(
    gateway: gwkit.Proc,
) -> None:
    reply = gwkit.call(gateway.url, "tools/list", token="not-a-token-of-this-server")
    assert reply.status == 401
    challenge = reply.headers["www-authenticate"]
    assert f'resource_metadata="{gateway.base}/.well-known/oauth-protected-resource/mcp"' in (
        challenge
    )
    metadata = httpx.get(f"{gateway.base}/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == f"{gateway.base}/mcp"
    assert metadata["authorization_servers"] == [gateway.base]
    server = httpx.get(f"{gateway.base}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == gateway.base
    assert server["registration_endpoint"] == f"{gateway.base}/register"


def test_check_accepts_the_example_and_names_a_misspelt_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("GITHUB_CLIENT_SECRET", CLIENT_SECRET)
    done = run_mcpkit("gateway", "--check", str(EXAMPLE), cwd=gwkit.ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(EXAMPLE.read_text().replace("client_secret_env", "client_secret_envv"))
    done = run_mcpkit("gateway", "--check", str(wrong), cwd=gwkit.ROOT)
    assert done.returncode == 1
    assert "auth.upstream.client_secret_envv" in done.stderr
    assert "client_secret_env" in done.stderr


@pytest.mark.parametrize("client", ["mcpkit", "claude"])
def test_auth_doctor_passes_every_step_at_the_gateway(gateway: gwkit.Proc, client: str) -> None:
    """What ``mcpkit auth doctor URL --client CLIENT --interactive`` does, the headless
    browser standing in for the person at the consent page."""
    report = diagnose(gateway.url, client=client, redirect_handler=PersonAtTheConsentPage())
    lines = [finding.line() for finding in report.findings]
    assert report.ok, lines
    assert {finding.status for finding in report.findings} == {"ok"}, lines
    assert [finding.step for finding in report.findings][-2:] == ["refresh", "call-after-refresh"]


RELOADED = """
[gateway]
state = "memory:"

[[upstream]]
name = "demo"
command = "mcpkit serve examples/quickstart.py"
prefix = ""

[auth]
mode = "authorization_server"
issuer = "http://127.0.0.1:{port}"
state = "memory:"

[auth.upstream]
provider = "github"
client_id = "{client_id}"
client_secret = "{client_secret}"
base_url = "{github}"
api_url = "{github}"
"""
# (the member's GitHub organizations are the token's groups, which [[rule]] groups match)
NO_ADD = '\n[[rule]]\nname = "no-add"\neffect = "deny"\ngroups = ["octo-org"]\nnames = ["add"]\n'


def test_a_reload_keeps_the_authorization_server_and_its_signed_in_users(
    github: tuple[str, GitHubDouble], log_dir: Path
) -> None:
    """Even on ``memory:`` state: the server (its keys, clients and grants) outlives a
    reload that leaves its settings alone, so nobody has to sign in again."""
    port = gwkit.free_port()
    text = RELOADED.format(
        port=port, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, github=github[0]
    )
    gw = gwkit.start_gateway("reloaded-authserver", log_dir, text, port=port)
    try:

        async def run() -> tuple[Browser, str]:
            browser = Browser()
            auth = OAuthClientAuth(redirect_handler=browser, policy=LOCAL, client_name="reload")
            try:
                async with Client(gw.url, auth=auth) as client:
                    await client.call_tool("add", {"a": 1, "b": 2})
                    (log_dir / "reloaded-authserver.toml").write_text(text + NO_ADD)
                    os.kill(gw.proc.pid, signal.SIGHUP)

                    async def add_refused() -> bool:
                        try:
                            await client.call_tool("add", {"a": 1, "b": 2})
                        except McpError as refused:
                            return "no-add" in str(refused)
                        return False

                    with anyio.fail_after(30):
                        while not await add_refused():
                            await anyio.sleep(0.2)
                    echoed = await client.call_tool("echo", {"text": "still signed in"})
            finally:
                await browser.aclose()
            return browser, echoed["content"][0]["text"]

        browser, echoed = anyio.run(run)
    finally:
        gw.stop()
    assert echoed == "still signed in"
    signed_in = [url for url in browser.visited if url.startswith(f"{gw.base}/authorize")]
    assert len(signed_in) == 1, browser.visited


def auth_refusal(auth: dict[str, Any]) -> str:
    """The error building a gateway whose ``[auth]`` table is ``auth`` gives."""
    data = {"upstream": [{"name": "demo", "url": "http://127.0.0.1:1/mcp"}], "auth": auth}
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    return str(caught.value)


GITHUB_UPSTREAM = {"provider": "github", "client_id": "c", "client_secret": "s"}


def test_the_mode_names_what_it_needs_and_what_it_does_not_read() -> None:
    mode = {"mode": "authorization_server"}
    missing = auth_refusal({**mode, "issuer": "http://127.0.0.1:8080"})
    assert "needs auth.upstream" in missing
    foreign = auth_refusal(
        {**mode, "issuer": "http://127.0.0.1:8080", "upstream": GITHUB_UPSTREAM, "jwks_url": "x"}
    )
    assert "auth.jwks_url is not read with auth.mode = 'authorization_server'" in foreign
    provider = auth_refusal(
        {**mode, "issuer": "http://127.0.0.1:8080", "upstream": {"provider": "oidc"}}
    )
    assert "auth.upstream.client_id" in provider
    needs_issuer = auth_refusal(
        {
            **mode,
            "issuer": "http://127.0.0.1:8080",
            "upstream": {**GITHUB_UPSTREAM, "provider": "oidc"},
        }
    )
    assert "provider 'oidc' needs issuer" in needs_issuer
    jwt = auth_refusal(
        {
            "mode": "jwt",
            "issuer": "http://127.0.0.1:9000",
            "resource": "http://127.0.0.1:8080/mcp",
            "upstream": GITHUB_UPSTREAM,
        }
    )
    assert "auth.upstream is read only with auth.mode = 'authorization_server'" in jwt


def test_the_mode_sets_the_resource_the_issuer_and_the_claims_the_rules_see() -> None:
    data = {
        "upstream": [{"name": "demo", "url": "http://127.0.0.1:1/mcp"}],
        "auth": {
            "mode": "authorization_server",
            "issuer": "https://gw.example.com",
            "upstream": GITHUB_UPSTREAM,
            "required_scopes": ["mcp"],
            "groups_claim": "teams",
            "tool_scopes": {"echo": "mcp:admin"},
        },
    }
    auth = parse_config(data).auth
    assert auth.resource == "https://gw.example.com/mcp"
    assert auth.authorization_servers == ("https://gw.example.com",)
    assert auth.scopes == ("mcp",)
    assert auth.groups_claim == "teams"
    assert auth.tool_scopes == {"echo": ("mcp:admin",)}
