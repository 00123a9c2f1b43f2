"""The OAuth client against the local authorization server and the protected example server
(real HTTP both ways), through the mcpkit client and through plain httpx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from authkit import LocalAuthorizationServer, Stack

from mcpkit.auth.client import (
    AuthorizationError,
    ClientCredentialsAuth,
    DiscoveryError,
    FileTokenStore,
    HeadlessRedirectHandler,
    InMemoryTokenStore,
    OAuthClientAuth,
    UntrustedAuthorizationServer,
    UrlPolicy,
)
from mcpkit.client import Client
from support.servers import serve_app

LOCAL = UrlPolicy.local_development()
REDIRECT = "http://127.0.0.1:53682/callback"


def interactive(**kw: Any) -> OAuthClientAuth:
    handler = HeadlessRedirectHandler(REDIRECT, policy=LOCAL)
    return OAuthClientAuth(redirect_handler=handler, policy=LOCAL, **kw)


def authorize_requests(authz: LocalAuthorizationServer) -> list[dict[str, str]]:
    return [params for method, path, params in authz.log if path == "/authorize"]


def grants(authz: LocalAuthorizationServer) -> list[str]:
    return [p.get("grant_type", "") for m, path, p in authz.log if path == "/token"]


@pytest.fixture
def fresh(stack: Stack) -> Stack:
    stack.authz.log.clear()
    return stack


async def _whoami_then_purge(url: str, auth: Any) -> tuple[Any, Any]:
    async with Client(url, auth=auth) as client:
        who = await client.call_tool("whoami", {})
        purged = await client.call_tool("purge", {})
    return who, purged


def test_full_flow_with_the_mcpkit_client_and_step_up(fresh: Stack) -> None:
    auth = interactive(client_name="test suite")
    who, purged = anyio.run(_whoami_then_purge, fresh.mcp_url, auth)
    assert who["structuredContent"]["subject"] == "demo-user"
    assert "mcp" in who["structuredContent"]["scopes"]
    assert "purged on behalf of demo-user" in str(purged["content"])
    asked = authorize_requests(fresh.authz)
    assert len(asked) == 2  # initial + one step-up for purge
    first, second = (set(a["scope"].split()) for a in asked)
    assert first == {"mcp", "offline_access"}  # the 401 challenge scope (+ refresh)
    assert {"mcp", "mcp:admin"} <= second  # previously granted scopes kept (union)
    for params in asked:
        assert params["code_challenge_method"] == "S256"
        assert params["resource"] == fresh.mcp_url
    registrations = [p for m, path, p in fresh.authz.log if path == "/register"]
    assert len(registrations) == 1  # the dynamic registration is reused for the step-up


def test_scope_step_up_when_the_first_grant_is_narrow(fresh: Stack) -> None:
    auth = interactive(scopes=["mcp"])

    async def run() -> None:
        async with httpx.AsyncClient(auth=auth) as http:
            assert (await _post(http, fresh.mcp_url, "whoami")).status_code == 200
            assert (await _post(http, fresh.mcp_url, "purge")).status_code == 200

    anyio.run(run)
    asked = [set(a.get("scope", "").split()) for a in authorize_requests(fresh.authz)]
    assert asked[0] == {"mcp", "offline_access"}
    assert {"mcp", "mcp:admin"} <= asked[1]


async def _post(http: httpx.AsyncClient, url: str, tool: str) -> httpx.Response:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta},
    }
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
        "Accept": "application/json, text/event-stream",
    }
    return await http.post(url, json=body, headers=headers)


def test_refresh_token_is_used_when_the_access_token_expires(stack: Stack) -> None:
    stack.authz.token_ttl_s = 5  # inside the client's 30 s safety margin: always "expired"
    try:
        stack.authz.log.clear()
        auth = interactive()

        async def run() -> None:
            async with httpx.AsyncClient(auth=auth) as http:
                for _ in range(3):
                    assert (await _post(http, stack.mcp_url, "whoami")).status_code == 200

        anyio.run(run)
        assert grants(stack.authz) == ["authorization_code", "refresh_token", "refresh_token"]
        assert len(authorize_requests(stack.authz)) == 1
    finally:
        stack.authz.token_ttl_s = 3600


def test_file_store_keeps_tokens_and_registration_across_clients(
    fresh: Stack, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"

    async def once() -> None:
        async with httpx.AsyncClient(auth=interactive(store=FileTokenStore(path))) as http:
            assert (await _post(http, fresh.mcp_url, "whoami")).status_code == 200

    anyio.run(once)
    anyio.run(once)
    assert len(authorize_requests(fresh.authz)) == 1
    assert path.stat().st_mode & 0o777 == 0o600
    assert "access_token" in path.read_text()


def test_sync_httpx_client(fresh: Stack) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    with httpx.Client(auth=interactive()) as http:
        response = http.post(fresh.mcp_url, json=body, headers=headers)
    assert response.status_code == 200
    assert "whoami" in response.text


def test_client_credentials(fresh: Stack) -> None:
    fresh.authz.add_client("machine-1", "machine-secret")
    auth = ClientCredentialsAuth("machine-1", client_secret="machine-secret", policy=LOCAL)

    async def run() -> dict[str, Any]:
        async with Client(fresh.mcp_url, auth=auth) as client:
            result = await client.call_tool("whoami", {})
        data: dict[str, Any] = result["structuredContent"]
        return data

    who = anyio.run(run)
    assert who["subject"] == "machine-1"
    assert grants(fresh.authz)[0] == "client_credentials"
    assert authorize_requests(fresh.authz) == []


def test_pinned_credentials_go_to_no_other_authorization_server(fresh: Stack) -> None:
    fresh.authz.add_client("machine-2", "machine-secret")
    elsewhere = "http://127.0.0.1:9/as"  # the only server these credentials may go to
    auth = ClientCredentialsAuth(
        "machine-2", client_secret="machine-secret", policy=LOCAL, issuer=elsewhere
    )
    with pytest.raises(UntrustedAuthorizationServer, match="not the pinned issuer") as caught:
        _try(fresh.mcp_url, auth)
    assert (caught.value.expected, caught.value.found) == (elsewhere, fresh.issuer)
    assert fresh.authz.log == []  # not even its metadata was fetched
    endpoint = f"{fresh.issuer}/other-token"
    auth = ClientCredentialsAuth(
        "machine-2",
        client_secret="machine-secret",
        policy=LOCAL,
        issuer=fresh.issuer,
        token_endpoint=endpoint,
    )
    with pytest.raises(UntrustedAuthorizationServer, match="not the pinned"):
        _try(fresh.mcp_url, auth)
    assert grants(fresh.authz) == []  # the metadata was read; nothing was posted


def test_pinned_credentials_work_with_their_own_server(fresh: Stack) -> None:
    fresh.authz.add_client("machine-3", "machine-secret")
    auth = ClientCredentialsAuth(
        "machine-3",
        client_secret="machine-secret",
        policy=LOCAL,
        issuer=fresh.issuer + "/",  # (a trailing slash is the same issuer)
        token_endpoint=f"{fresh.issuer}/token",
    )
    _try(fresh.mcp_url, auth)
    assert grants(fresh.authz) == ["client_credentials"]


def test_concurrent_requests_share_one_authorization(fresh: Stack) -> None:
    auth = interactive()

    async def run() -> None:
        async with httpx.AsyncClient(auth=auth) as http, anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(_post, http, fresh.mcp_url, "whoami")

    anyio.run(run)
    assert len(authorize_requests(fresh.authz)) == 1


def _variant(local_as: LocalAuthorizationServer, **changes: Any) -> Any:
    """An AS whose metadata or redirect differs from the well-behaved one."""

    class Variant(LocalAuthorizationServer):
        def metadata(self) -> dict[str, Any]:
            doc = super().metadata()
            for key, value in changes.get("metadata", {}).items():
                if value is None:
                    doc.pop(key, None)
                else:
                    doc[key] = value
            return doc

        def authorize(self, query: dict[str, str]) -> Any:
            status, body, headers = super().authorize(query)
            if "iss" in changes:
                headers["location"] = headers["location"].replace(
                    "iss=" + _q(self.issuer), "iss=" + _q(changes["iss"])
                )
            return status, body, headers

    return Variant


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def _protected_for(issuer: str) -> Any:
    import protected_server

    return lambda base: protected_server.build_app(issuer, f"{base}/mcp")


def _try(url: str, auth: Any) -> None:
    async def run() -> None:
        async with httpx.AsyncClient(auth=auth) as http:
            await _post(http, url, "whoami")

    anyio.run(run)


def test_refuses_an_authorization_server_without_pkce_s256(
    local_as: LocalAuthorizationServer,
) -> None:
    cls = _variant(local_as, metadata={"code_challenge_methods_supported": None})
    with (
        serve_app(lambda base: cls(base)) as (issuer, authz),
        serve_app(_protected_for(issuer)) as (b, _),
    ):
        with pytest.raises(DiscoveryError, match="S256"):
            _try(f"{b}/mcp", interactive())
        assert not [p for m, path, p in authz.log if path == "/authorize"]


def test_rejects_a_mismatched_iss_before_redeeming_the_code(
    local_as: LocalAuthorizationServer,
) -> None:
    cls = _variant(local_as, iss="https://evil.example.com")
    with (
        serve_app(lambda base: cls(base)) as (issuer, authz),
        serve_app(_protected_for(issuer)) as (b, _),
    ):
        with pytest.raises(AuthorizationError, match="RFC 9207"):
            _try(f"{b}/mcp", interactive())
        assert not [p for m, path, p in authz.log if path == "/token"]


def test_rejects_metadata_for_another_resource(stack: Stack) -> None:
    from mcpkit.auth import BearerAuth, JwtVerifier
    from mcpkit.server import Server
    from mcpkit.transports.http import McpHttpApp

    def make(base: str) -> Any:
        verifier = JwtVerifier(issuer=stack.issuer, audience=f"{base}/mcp")
        auth = BearerAuth(
            verifier, resource="https://evil.example.com/mcp", authorization_servers=[stack.issuer]
        )
        auth.metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
        auth.metadata_paths = ("/.well-known/oauth-protected-resource/mcp",)
        return McpHttpApp(Server("x"), auth=auth)

    stack.authz.log.clear()
    with serve_app(make) as (base, _), pytest.raises(DiscoveryError, match="not for"):
        _try(f"{base}/mcp", interactive())
    assert authorize_requests(stack.authz) == []


def test_ssrf_policy_applies_to_discovery(stack: Stack) -> None:
    auth = OAuthClientAuth(
        redirect_handler=HeadlessRedirectHandler(REDIRECT), store=InMemoryTokenStore()
    )  # production policy: no loopback
    with pytest.raises(DiscoveryError, match="loopback"):
        _try(stack.mcp_url, auth)


@pytest.mark.anyio
async def test_async_flow_on_each_event_loop(fresh: Stack) -> None:
    async with httpx.AsyncClient(auth=interactive()) as http:
        response = await _post(http, fresh.mcp_url, "whoami")
    assert response.status_code == 200
    assert "demo-user" in response.text


def test_tokens_are_never_sent_to_another_origin(fresh: Stack) -> None:
    auth = interactive()
    seen: list[str | None] = []

    async def other(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]).get(b"authorization", b"").decode() or None)
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    async def run(elsewhere: str) -> None:
        async with httpx.AsyncClient(auth=auth) as http:
            assert (await _post(http, fresh.mcp_url, "whoami")).status_code == 200
            assert (await http.get(elsewhere)).status_code == 401

    with serve_app(lambda base: other) as (base, _):
        anyio.run(run, f"{base}/steal")
    assert seen == [None]
    assert len(authorize_requests(fresh.authz)) == 1  # and the 401 there starts nothing


def test_demo_client_example_runs(stack: Stack, tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "examples" / "auth" / "demo_client.py"
    out = subprocess.run(
        [sys.executable, str(script), stack.mcp_url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'subject': 'demo-user'" in out.stdout
    assert "purged on behalf of demo-user" in out.stdout


def test_a_server_that_rejects_every_token_does_not_cause_a_loop(stack: Stack) -> None:
    from mcpkit.auth import BearerAuth, InvalidToken, Principal
    from mcpkit.server import Server
    from mcpkit.transports.http import McpHttpApp

    class Rejects:
        async def verify(self, token: str) -> Principal:
            raise InvalidToken("no token is good enough")

    def make(base: str) -> Any:
        auth = BearerAuth(Rejects(), resource=f"{base}/mcp", authorization_servers=[stack.issuer])
        return McpHttpApp(Server("grumpy"), auth=auth)

    stack.authz.log.clear()
    with serve_app(make) as (base, _), pytest.raises(AuthorizationError, match="still answers 401"):
        _try(f"{base}/mcp", interactive())
    assert len(authorize_requests(stack.authz)) == 1


def test_loopback_redirect_handler_receives_the_redirect(fresh: Stack) -> None:
    from mcpkit.auth.client import LoopbackRedirectHandler

    visited: list[str] = []

    def browser(url: str) -> None:  # a browser that follows the AS's redirect to us
        visited.append(url)
        response = httpx.get(url, follow_redirects=True, timeout=10)
        assert response.status_code == 200
        assert "You can close this window" in response.text

    handler = LoopbackRedirectHandler(open_url=browser, timeout_s=20)
    auth = OAuthClientAuth(redirect_handler=handler, policy=LOCAL)

    async def run() -> None:
        async with httpx.AsyncClient(auth=auth) as http:
            assert (await _post(http, fresh.mcp_url, "whoami")).status_code == 200

    anyio.run(run)
    assert len(visited) == 1 and visited[0].startswith(fresh.issuer + "/authorize?")
    assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{handler.port}%2Fcallback" in visited[0]
