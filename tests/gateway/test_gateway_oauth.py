"""The gateway as a standard OAuth 2.1 protected resource (MCP authorization spec).

Real processes and sockets: the test-double authorization server from ``examples/auth``
(uvicorn on 127.0.0.1, in this process so its request log can be read), an upstream
``mcpkit serve`` process and a ``mcpkit gateway`` process with ``[auth] mode = "jwt"``.
The client is mcpkit's own (``mcpkit.client.Client`` with ``mcpkit.auth.client``): it
starts with no token and must find everything from the gateway's 401.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import gwkit
import httpx
import pytest

sys.path.insert(0, str(gwkit.ROOT / "tests" / "auth"))
from authkit import LocalAuthorizationServer

from mcpkit.auth.challenge import parse_challenges
from mcpkit.auth.client import (
    HeadlessRedirectHandler,
    InMemoryTokenStore,
    OAuthClientAuth,
    UrlPolicy,
)
from mcpkit.client import Client

LOCAL = UrlPolicy.local_development()
REDIRECT = "http://127.0.0.1:53682/callback"
ADMIN_TOOL = "up_pid"


@pytest.fixture(scope="module")
def gateway(authz: LocalAuthorizationServer, log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    upstream = gwkit.start_upstream("up", log_dir)
    stack.append(upstream)
    port = gwkit.free_port()
    config = f"""
[gateway]
state = "memory:"

[auth]
mode = "jwt"
issuer = "{authz.issuer}"
resource = "http://127.0.0.1:{port}/mcp"
scopes = ["mcp"]
[auth.tool_scopes]
{ADMIN_TOOL} = ["mcp:admin"]
""" + gwkit.toml_upstream("up", url=upstream.url, prefix="up_")
    gw = gwkit.start_gateway("gateway", log_dir, config, port=port)
    stack.append(gw)
    return gw


def machine_token(authz: LocalAuthorizationServer, scope: str, resource: str | None) -> str:
    form = {"grant_type": "client_credentials", "scope": scope}
    if resource is not None:
        form["resource"] = resource
    response = httpx.post(f"{authz.issuer}/token", data=form, auth=("robot", "s3cret"))
    response.raise_for_status()
    return str(response.json()["access_token"])


def test_protected_resource_metadata(gateway: gwkit.Proc, authz: LocalAuthorizationServer) -> None:
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        response = httpx.get(gateway.base + path)
        assert response.status_code == 200, (path, response.text)
        doc = response.json()
        assert doc["resource"] == gateway.url
        assert doc["authorization_servers"] == [authz.issuer]
        assert {"mcp", "mcp:admin"} <= set(doc["scopes_supported"])


def test_401_says_where_to_log_in(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(gateway.url, "tools/list")
    assert reply.status == 401 and reply.error["code"] == -31001
    (challenge,) = parse_challenges(reply.headers["www-authenticate"])
    assert challenge.scheme == "Bearer" and challenge.error is None
    assert challenge.resource_metadata == gateway.base + "/.well-known/oauth-protected-resource/mcp"
    assert challenge.scopes == ["mcp"]


def test_token_for_another_resource_is_refused(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    token = machine_token(authz, "mcp", "http://127.0.0.1:1/mcp")
    reply = gwkit.call(gateway.url, "tools/list", token=token)
    assert reply.status == 401
    assert parse_challenges(reply.headers["www-authenticate"])[0].error == "invalid_token"


def test_missing_tool_scope_is_a_403_step_up_challenge(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    token = machine_token(authz, "mcp", gateway.url)
    assert gwkit.call(gateway.url, "tools/call", {"name": "up_whoami"}, token=token).text() == "up"
    session = gwkit.LegacySession(gateway.url, token=token)  # (no Mcp-Name to go by)
    assert session.initialize().status == 200
    legacy = session.request("tools/call", {"name": ADMIN_TOOL})
    session.close()
    for reply in (gwkit.call(gateway.url, "tools/call", {"name": ADMIN_TOOL}, token=token), legacy):
        assert reply.status == 403, reply.body
        (challenge,) = parse_challenges(reply.headers["www-authenticate"])
        assert challenge.error == "insufficient_scope"
        assert challenge.scopes == ["mcp", "mcp:admin"]
        assert challenge.resource_metadata is not None
    admin = machine_token(authz, "mcp mcp:admin", gateway.url)
    reply = gwkit.call(gateway.url, "tools/call", {"name": ADMIN_TOOL}, token=admin)
    assert int(reply.text()) > 0


def test_a_real_client_logs_in_through_the_front(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    """From nothing: 401 -> metadata -> AS discovery -> registration -> PKCE -> token ->
    the call; then a step-up (403) for the admin tool, keeping the scopes granted."""
    authz.log.clear()
    store = InMemoryTokenStore()
    auth = OAuthClientAuth(
        redirect_handler=HeadlessRedirectHandler(REDIRECT, policy=LOCAL),
        policy=LOCAL,
        store=store,
        client_name="gateway test",
    )

    async def session() -> tuple[Any, Any]:
        async with Client(gateway.url, auth=auth) as client:
            who = await client.call_tool("up_whoami", {})
            pid = await client.call_tool(ADMIN_TOOL, {})
        return who, pid

    who, pid = anyio.run(session)
    assert who["content"][0]["text"] == "up"
    assert int(pid["content"][0]["text"]) > 0
    asked = [params for _, path, params in authz.log if path == "/authorize"]
    assert len(asked) == 2, asked  # the login, then one step-up
    assert set(asked[0]["scope"].split()) >= {"mcp"} and "mcp:admin" not in asked[0]["scope"]
    assert {"mcp", "mcp:admin"} <= set(asked[1]["scope"].split())
    for params in asked:
        assert params["resource"] == gateway.url  # RFC 8707: tokens for this gateway only
        assert params["code_challenge_method"] == "S256"
    tokens = store.get_tokens(gateway.url)
    assert tokens is not None


def test_a_body_too_large_for_the_scope_check_is_413(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    token = machine_token(authz, "mcp", gateway.url)
    huge = "x" * (5 * 1024 * 1024)  # over the 4 MiB default
    reply = gwkit.call(
        gateway.url, "tools/call", {"name": "up_whoami", "arguments": {"pad": huge}}, token=token
    )
    assert reply.status == 413 and "Payload Too Large" in reply.error["message"]


def test_opaque_tokens_through_introspection(
    authz: LocalAuthorizationServer, log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    """``introspection_endpoint``: the gateway asks the authorization server (RFC 7662)
    with its own client credentials instead of checking a JWT itself."""
    authz.add_client("gw-introspect", "i-secret")
    upstream = gwkit.start_upstream("up2", log_dir)
    stack.append(upstream)
    port = gwkit.free_port()
    config = f"""
[gateway]
state = "memory:"
[auth]
mode = "jwt"
issuer = "{authz.issuer}"
resource = "http://127.0.0.1:{port}/mcp"
scopes = ["mcp"]
introspection_endpoint = "{authz.issuer}/introspect"
introspection_client_id = "gw-introspect"
introspection_client_secret = "${{GW_INTROSPECT_SECRET}}"
""" + gwkit.toml_upstream("up2", url=upstream.url, prefix="up2_")
    gw = gwkit.start_gateway(
        "introspecting", log_dir, config, port=port, GW_INTROSPECT_SECRET="i-secret"
    )
    stack.append(gw)
    authz.log.clear()
    good = machine_token(authz, "mcp", gw.url)
    assert gwkit.call(gw.url, "tools/call", {"name": "up2_whoami"}, token=good).text() == "up2"
    assert any(path == "/introspect" for _, path, _ in authz.log)  # it asked, not decoded
    foreign = machine_token(authz, "mcp", "http://127.0.0.1:1/mcp")
    refused = gwkit.call(gw.url, "tools/list", token=foreign)
    assert refused.status == 401
    assert parse_challenges(refused.headers["www-authenticate"])[0].error == "invalid_token"
    gw.stop()
