"""The resource server over real HTTP: the example protected server (uvicorn) verifying
JWTs from the local authorization server's JWKS."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from authkit import Stack
from joserfc.jwk import ECKey

from mcpkit.auth import BearerAuth, IntrospectionVerifier, JwtVerifier, Principal
from mcpkit.auth.challenge import parse_challenges
from mcpkit.server import Context, Server
from mcpkit.transports.http import McpHttpApp
from support.servers import serve_app

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def call(url: str, token: str | None, method: str = "tools/list", **params: Any) -> httpx.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    return httpx.post(url, json=body, headers=headers)


def challenge(response: httpx.Response) -> dict[str, str]:
    found = parse_challenges(response.headers.get("www-authenticate"))
    assert found and found[0].scheme == "Bearer"
    return found[0].params


def good_token(stack: Stack, scope: str = "mcp", **kw: Any) -> str:
    return stack.authz.mint(audience=stack.mcp_url, scope=scope, **kw)


def test_metadata_is_served_at_the_path_aware_and_root_well_known(stack: Stack) -> None:
    base = stack.mcp_url.removesuffix("/mcp")
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        response = httpx.get(base + path)
        assert response.status_code == 200
        doc = response.json()
        assert doc["resource"] == stack.mcp_url
        assert doc["authorization_servers"] == [stack.issuer]
        assert set(doc["scopes_supported"]) == {"mcp", "mcp:admin"}
        assert response.headers["access-control-allow-origin"] == "*"
    assert httpx.post(base + "/.well-known/oauth-protected-resource/mcp").status_code == 405


def test_no_token_gets_401_with_resource_metadata_and_scope(stack: Stack) -> None:
    response = call(stack.mcp_url, None)
    assert response.status_code == 401
    params = challenge(response)
    base = stack.mcp_url.removesuffix("/mcp")
    assert params["resource_metadata"] == f"{base}/.well-known/oauth-protected-resource/mcp"
    assert params["scope"] == "mcp"
    assert "error" not in params  # RFC 6750 §3.1: no error code without credentials


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_every_http_method_is_authenticated(stack: Stack, method: str) -> None:
    response = httpx.request(method, stack.mcp_url, headers={"Mcp-Session-Id": "x"})
    assert response.status_code == 401


def test_token_in_query_is_ignored(stack: Stack) -> None:
    token = good_token(stack)
    response = call(stack.mcp_url + f"?access_token={token}", None)
    assert response.status_code == 401


def test_basic_credentials_get_401(stack: Stack) -> None:
    response = httpx.post(stack.mcp_url, headers={"Authorization": "Basic dXNlcjpwYXNz"}, json={})
    assert response.status_code == 401
    assert "error" not in challenge(response)


def test_malformed_bearer_gets_400(stack: Stack) -> None:
    response = httpx.post(stack.mcp_url, headers={"Authorization": 'Bearer a b"c'}, json={})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_wrong_audience_gets_401_invalid_token(stack: Stack) -> None:
    token = stack.authz.mint(audience="https://other.example.com/mcp", scope="mcp")
    response = call(stack.mcp_url, token)
    assert response.status_code == 401
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert "audience" in params["error_description"]


def test_expired_token_gets_401(stack: Stack) -> None:
    response = call(stack.mcp_url, good_token(stack, ttl_s=-120))
    assert response.status_code == 401
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert "expired" in params["error_description"]


def test_wrong_issuer_gets_401(stack: Stack) -> None:
    token = good_token(stack, issuer="https://evil.example.com")
    response = call(stack.mcp_url, token)
    assert response.status_code == 401
    assert challenge(response)["error"] == "invalid_token"


def test_foreign_signing_key_gets_401(stack: Stack) -> None:
    other = ECKey.generate_key("P-256", private=True, parameters={"kid": "as-key-1"})
    response = call(stack.mcp_url, good_token(stack, key=other))
    assert response.status_code == 401
    assert "signature" in challenge(response)["error_description"]


def test_unsigned_token_gets_401(stack: Stack) -> None:
    import base64

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    claims = {"iss": stack.issuer, "aud": stack.mcp_url, "sub": "x", "exp": 2**31, "scope": "mcp"}
    token = f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."
    assert call(stack.mcp_url, token).status_code == 401


def test_missing_scope_gets_403_insufficient_scope(stack: Stack) -> None:
    response = call(stack.mcp_url, good_token(stack, scope="other"))
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "mcp"
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")


def test_per_tool_scope_gets_403_then_succeeds_with_it(stack: Stack) -> None:
    response = call(stack.mcp_url, good_token(stack), "tools/call", name="purge", arguments={})
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"].split() == ["mcp", "mcp:admin"]
    token = good_token(stack, scope="mcp mcp:admin")
    response = call(stack.mcp_url, token, "tools/call", name="purge", arguments={})
    assert response.status_code == 200, response.text
    assert "purged on behalf of demo-user" in response.text


def test_valid_token_reaches_the_handler_with_its_principal(stack: Stack) -> None:
    token = good_token(stack, subject="alice", client_id="cli-1", scope="mcp extra")
    response = call(stack.mcp_url, token, "tools/call", name="whoami", arguments={})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["structuredContent"] == {
        "subject": "alice",
        "client_id": "cli-1",
        "scopes": ["extra", "mcp"],
    }


def test_legacy_session_keeps_working_when_the_token_is_renewed(stack: Stack) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    first = good_token(stack, subject="bob")
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    response = httpx.post(
        stack.mcp_url, json=init, headers={**headers, "Authorization": f"Bearer {first}"}
    )
    assert response.status_code == 200
    session = response.headers["mcp-session-id"]
    renewed = good_token(stack, subject="bob", scope="mcp mcp:admin")
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    legacy = {**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    ok = httpx.post(
        stack.mcp_url, json=listing, headers={**legacy, "Authorization": f"Bearer {renewed}"}
    )
    assert ok.status_code == 200
    someone_else = good_token(stack, subject="mallory")
    denied = httpx.post(
        stack.mcp_url, json=listing, headers={**legacy, "Authorization": f"Bearer {someone_else}"}
    )
    assert denied.status_code == 404  # another principal's session looks like no session


def test_authorization_header_never_reaches_the_app() -> None:
    import anyio

    seen: dict[str, Any] = {}

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen["headers"] = dict(scope["headers"])
        seen["principal"] = scope.get("mcpkit.principal")
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    class Fixed:
        async def verify(self, token: str) -> Principal:
            return Principal("zed", frozenset({"mcp"}))

    auth = BearerAuth(Fixed(), resource="http://127.0.0.1/mcp", authorization_servers=["http://as"])
    app = auth.wrap(inner)

    async def run() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.post("/mcp", headers={"Authorization": "Bearer abc"})
            assert response.status_code == 204

    anyio.run(run)
    assert b"authorization" not in seen["headers"]
    assert seen["principal"].subject == "zed"


def test_principal_identity_ignores_scopes_and_matches_its_key() -> None:
    a = Principal("s", frozenset({"x"}), client_id="c", issuer="i")
    b = Principal("s", frozenset({"x", "y"}), client_id="c", issuer="i")
    assert a == b and hash(a) == hash(b)
    assert a == str(b)  # restored from shared state as its key
    assert a != Principal("s", client_id="other", issuer="i")


def test_introspection_verifier(stack: Stack) -> None:
    stack.authz.add_client("rs-client", "rs-secret")
    verifier = IntrospectionVerifier(
        f"{stack.issuer}/introspect",
        audience="http://127.0.0.1:1/mcp",
        client_id="rs-client",
        client_secret="rs-secret",
        issuer=stack.issuer,
    )
    server = Server("introspected")

    @server.tool
    def me(ctx: Context) -> str:
        return f"{ctx.principal.subject}:{ctx.principal.client_id}"

    def make(base: str) -> Any:
        auth = BearerAuth(
            verifier,
            resource=f"{base}/mcp",
            authorization_servers=[stack.issuer],
            required_scopes=["mcp"],
        )
        verifier.audiences = (f"{base}/mcp",)
        return McpHttpApp(server, auth=auth)

    with serve_app(make) as (base, _):
        url = f"{base}/mcp"
        token = stack.authz.mint(audience=url, scope="mcp", subject="carol", client_id="c9")
        response = call(url, token, "tools/call", name="me", arguments={})
        assert response.status_code == 200, response.text
        assert "carol:c9" in response.text
        wrong = stack.authz.mint(audience="https://elsewhere/mcp", scope="mcp")
        assert call(url, wrong).status_code == 401
        expired = stack.authz.mint(audience=url, scope="mcp", ttl_s=-5)
        assert call(url, expired).status_code == 401
        assert call(url, "not-a-token").status_code == 401


def test_jwt_verifier_refuses_symmetric_algorithms() -> None:
    with pytest.raises(ValueError):
        JwtVerifier(
            issuer="https://as", audience="https://rs/mcp", jwks={"keys": []}, algorithms=["HS256"]
        )
    with pytest.raises(ValueError):
        JwtVerifier(
            issuer="https://as", audience="https://rs/mcp", jwks_uri="http://as.example/jwks"
        )


def test_dpop_bound_token_is_refused_as_a_bearer_token(stack: Stack) -> None:
    token = good_token(stack, extra={"cnf": {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}})
    response = call(stack.mcp_url, token)
    assert response.status_code == 401
    assert "sender-constrained" in challenge(response)["error_description"]
