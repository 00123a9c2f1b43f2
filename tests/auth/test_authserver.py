"""``mcpkit.auth.server`` end to end over real HTTP: an MCP server with its own
authorization server in one app (``McpHttpApp(server, auth=AuthorizationServer(...))``),
users signing in at a GitHub-style provider (OAuth without OIDC, ``github_double``), the
mcpkit client signing in through it, and the security properties each named after what
holds."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from authkit import (
    REDIRECT,
    Browser,
    authorize_url,
    call_whoami,
    consent_fields,
    pkce_pair,
    register,
)
from github_double import CLIENT_ID, CLIENT_SECRET, GitHubDouble

from mcpkit.auth.client import OAuthClientAuth, UrlPolicy
from mcpkit.auth.server import github
from mcpkit.client import Client
from mcpkit.state.memory import MemoryBackend
from support.servers import ThreadServer, serve_app

pytest.importorskip("joserfc")

LOCAL = UrlPolicy.local_development()
OTHER_RESOURCE = "https://other.example/mcp"


@dataclass
class Federated:
    base: str
    app: Any
    github: GitHubDouble
    state: MemoryBackend
    github_base: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def federated() -> Iterator[Federated]:
    import federated_server

    double = GitHubDouble()
    state = MemoryBackend()
    with ThreadServer(double) as gh:

        def make(base: str) -> Any:
            upstream = github(CLIENT_ID, CLIENT_SECRET, base_url=gh.base, api_url=gh.base)
            return federated_server.build_app(
                base,
                upstream,
                state=state,
                resources=[f"{base}/mcp", OTHER_RESOURCE],
                metadata_policy=LOCAL,
            )

        with serve_app(make) as (base, app):
            yield Federated(base, app, double, state, gh.base)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=20.0) as client:
        yield client


# --------------------------------------------------------------------------- helpers


async def signed_in_code(base: str, client_id: str, challenge: str, **extra: str) -> str:
    browser = Browser(REDIRECT)
    try:
        answer = await browser.authorize(authorize_url(base, client_id, challenge, **extra))
    finally:
        await browser.aclose()
    assert "code" in answer, answer
    assert answer["state"] == "st-1" and answer["iss"] == base
    return answer["code"]


async def token(http: httpx.AsyncClient, base: str, **form: str) -> httpx.Response:
    return await http.post(f"{base}/token", data=form)


async def tokens_for(
    http: httpx.AsyncClient, base: str, client_id: str, **extra: str
) -> dict[str, Any]:
    verifier, challenge = pkce_pair()
    code = await signed_in_code(base, client_id, challenge, **extra)
    response = await token(
        http,
        base,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        redirect_uri=REDIRECT,
        client_id=client_id,
    )
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    data: dict[str, Any] = response.json()
    return data


def _segment(jwt: str, index: int) -> dict[str, Any]:
    part = jwt.split(".")[index]
    data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return data


def claims_of(jwt: str) -> dict[str, Any]:
    return _segment(jwt, 1)


def header_of(jwt: str) -> dict[str, Any]:
    return _segment(jwt, 0)


def assert_no_redirect(response: httpx.Response, status: int = 400) -> None:
    assert response.status_code == status, response.text
    assert "location" not in response.headers


# --------------------------------------------------------------------------- the flow


@pytest.mark.anyio
async def test_the_mcpkit_client_signs_in_through_a_github_style_provider_and_calls_a_tool(
    federated: Federated,
) -> None:
    browser = Browser(REDIRECT)
    auth = OAuthClientAuth(redirect_handler=browser, policy=LOCAL, client_name="suite client")
    try:
        async with Client(federated.mcp_url, auth=auth) as client:
            result = await client.call_tool("whoami", {})
    finally:
        await browser.aclose()
    who = result["structuredContent"]
    # The identity comes from GitHub's user API: id as subject, the primary verified
    # address from /user/emails (/user shows none), organizations as groups.
    assert who["subject"] == "4242"
    assert who["email"] == "octocat@example.com"
    assert who["name"] == "octocat"
    assert who["groups"] == ["mcpkit-devs", "octo-org"]
    assert browser.consent_page is not None and "suite client" in browser.consent_page
    # GitHub's tokens never reached the client: nothing it saw carries one.
    assert federated.github.tokens
    for seen in browser.visited:
        assert not any(t in seen for t in federated.github.tokens)


@pytest.mark.anyio
async def test_access_tokens_are_at_jwt_for_one_audience_with_identity_claims(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    issued = await tokens_for(http, federated.base, client["client_id"])
    header = header_of(issued["access_token"])
    assert header["typ"] == "at+jwt" and header["alg"] == "ES256"
    claims = claims_of(issued["access_token"])
    assert claims["iss"] == federated.base
    assert claims["aud"] == federated.mcp_url
    assert claims["client_id"] == client["client_id"]
    assert claims["sub"] == "4242" and claims["groups"] == ["mcpkit-devs", "octo-org"]
    jwks = (await http.get(f"{federated.base}/jwks.json")).json()
    assert header["kid"] in [k["kid"] for k in jwks["keys"]]
    assert all("d" not in k for k in jwks["keys"])  # public halves only
    assert (await call_whoami(http, federated.mcp_url, issued["access_token"])).status_code == 200


@pytest.mark.anyio
async def test_metadata_points_clients_at_this_authorization_server(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    prm = (await http.get(f"{federated.base}/.well-known/oauth-protected-resource/mcp")).json()
    assert prm["authorization_servers"] == [federated.base]
    assert prm["resource"] == federated.mcp_url
    meta = (await http.get(f"{federated.base}/.well-known/oauth-authorization-server")).json()
    assert meta["issuer"] == federated.base
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["client_id_metadata_document_supported"] is True
    assert meta["registration_endpoint"] == f"{federated.base}/register"
    unauthenticated = await call_whoami(http, federated.mcp_url, "")
    assert unauthenticated.status_code == 401
    challenge = unauthenticated.headers["www-authenticate"]
    assert (
        f'resource_metadata="{federated.base}/.well-known/oauth-protected-resource/mcp"'
        in challenge
    )


# --------------------------------------------------------------------------- security


@pytest.mark.anyio
async def test_pkce_downgrade_plain_or_absent_is_refused(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    verifier, challenge = pkce_pair()
    plain = authorize_url(
        federated.base,
        client["client_id"],
        None,
        code_challenge=verifier,
        code_challenge_method="plain",
    )
    absent = authorize_url(federated.base, client["client_id"], None)
    for url in (plain, absent):
        response = await http.get(url)
        assert response.status_code == 302
        location = response.headers["location"]
        assert location.startswith(REDIRECT + "?") and "error=invalid_request" in location
    # A code obtained with S256 is not redeemed without the verifier.
    code = await signed_in_code(federated.base, client["client_id"], challenge)
    missing = await token(
        http,
        federated.base,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
    )
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_grant"


@pytest.mark.anyio
async def test_redirect_uri_mismatch_is_refused_without_redirecting(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    _, challenge = pkce_pair()
    for wrong in (
        "https://evil.example/callback",
        "http://127.0.0.1:53682/callback/x",
        "http://localhost:53682/callback",
    ):
        response = await http.get(
            authorize_url(federated.base, client["client_id"], challenge, redirect_uri=wrong)
        )
        assert_no_redirect(response)
    # The loopback rule: the same loopback URI on another port is the same client.
    other_port = await http.get(
        authorize_url(
            federated.base,
            client["client_id"],
            challenge,
            redirect_uri="http://127.0.0.1:40001/callback",
        )
    )
    assert other_port.status_code == 200 and "name='csrf'" in other_port.text
    # At the token endpoint the redirect URI must equal the authorization request's.
    verifier, challenge = pkce_pair()
    code = await signed_in_code(federated.base, client["client_id"], challenge)
    response = await token(
        http,
        federated.base,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        redirect_uri="http://127.0.0.1:53682/other",
        client_id=client["client_id"],
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


@pytest.mark.anyio
async def test_authorization_code_replay_fails_and_revokes_the_tokens_it_issued(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    verifier, challenge = pkce_pair()
    code = await signed_in_code(federated.base, client["client_id"], challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
        "client_id": client["client_id"],
    }
    first = await token(http, federated.base, **form)
    assert first.status_code == 200
    issued = first.json()
    assert (await call_whoami(http, federated.mcp_url, issued["access_token"])).status_code == 200
    replay = await token(http, federated.base, **form)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    refused = await call_whoami(http, federated.mcp_url, issued["access_token"])
    assert refused.status_code == 401 and "revoked" in refused.json()["error_description"]
    refresh = await token(
        http,
        federated.base,
        grant_type="refresh_token",
        refresh_token=issued["refresh_token"],
        client_id=client["client_id"],
    )
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"


@pytest.mark.anyio
async def test_a_token_for_another_resource_is_refused_here(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    issued = await tokens_for(http, federated.base, client["client_id"], resource=OTHER_RESOURCE)
    assert claims_of(issued["access_token"])["aud"] == OTHER_RESOURCE
    response = await call_whoami(http, federated.mcp_url, issued["access_token"])
    assert response.status_code == 401
    assert "another resource" in response.json()["error_description"]
    _, challenge = pkce_pair()
    unknown = await http.get(
        authorize_url(
            federated.base, client["client_id"], challenge, resource="https://unknown.example/mcp"
        )
    )
    assert unknown.status_code == 302 and "error=invalid_target" in unknown.headers["location"]


@pytest.mark.anyio
async def test_refresh_token_reuse_revokes_the_whole_family(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    first = await tokens_for(http, federated.base, client["client_id"])
    refresh = {"grant_type": "refresh_token", "client_id": client["client_id"]}
    rotated = await token(http, federated.base, refresh_token=first["refresh_token"], **refresh)
    assert rotated.status_code == 200
    second = rotated.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert (await call_whoami(http, federated.mcp_url, second["access_token"])).status_code == 200
    reused = await token(http, federated.base, refresh_token=first["refresh_token"], **refresh)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    # The thief's replay cost the legitimate holder too: the family is gone.
    after = await token(http, federated.base, refresh_token=second["refresh_token"], **refresh)
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant"
    assert (await call_whoami(http, federated.mcp_url, second["access_token"])).status_code == 401


@pytest.mark.anyio
async def test_client_metadata_document_on_a_private_address_is_refused(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    _, challenge = pkce_pair()
    for document in (
        "https://10.1.2.3/client.json",
        "https://169.254.169.254/latest/client",
        "https://[fd00::1]/client.json",
    ):
        response = await http.get(authorize_url(federated.base, document, challenge))
        assert_no_redirect(response)
        assert "refused" in response.text


@pytest.mark.anyio
async def test_client_metadata_document_is_fetched_and_used(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    documents: dict[str, Any] = {}

    async def serve_document(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = json.dumps(documents["doc"]).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    with ThreadServer(serve_document, lifespan="off") as host:
        client_id = f"{host.base}/client.json"
        documents["doc"] = {
            "client_id": client_id,
            "client_name": "Metadata Client",
            "redirect_uris": [REDIRECT],
        }
        issued = await tokens_for(http, federated.base, client_id)
        assert claims_of(issued["access_token"])["client_id"] == client_id
        documents["doc"] = {**documents["doc"], "client_id": "https://someone.else/client.json"}
        _, challenge = pkce_pair()
        mismatch = await http.get(authorize_url(federated.base, client_id, challenge))
        assert_no_redirect(mismatch)


@pytest.mark.anyio
async def test_consent_csrf_a_form_posted_from_another_browser_is_refused(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    _, challenge = pkce_pair()
    attacker = Browser(REDIRECT)
    try:
        page = await attacker.http.get(
            authorize_url(federated.base, client["client_id"], challenge)
        )
        fields = consent_fields(page.text)
        # The victim's browser posts the attacker's form: it has no (or another) cookie.
        codes_before = len(federated.github.codes) + len(federated.github.refused)
        victim = await http.post(
            f"{federated.base}/consent", data={**fields, "decision": "approve"}
        )
        assert_no_redirect(victim, 403)
        forged = await attacker.http.post(
            f"{federated.base}/consent", data={**fields, "csrf": "forged", "decision": "approve"}
        )
        assert_no_redirect(forged, 403)
        assert len(federated.github.codes) + len(federated.github.refused) == codes_before
        # The page itself may not be framed.
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        # The genuine browser's approval goes on to the provider.
        genuine = await attacker.http.post(
            f"{federated.base}/consent", data={**fields, "decision": "approve"}
        )
        assert genuine.status_code == 302 and genuine.headers["location"].startswith(
            federated.github_base
        )
    finally:
        await attacker.aclose()


@pytest.mark.anyio
async def test_open_redirect_errors_go_only_to_a_registered_uri(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    _, challenge = pkce_pair()
    evil = "https://evil.example/steal"
    unknown_client = await http.get(
        authorize_url(federated.base, "no-such-client", challenge, redirect_uri=evil)
    )
    assert_no_redirect(unknown_client)
    unregistered = await http.get(
        authorize_url(
            federated.base, client["client_id"], challenge, redirect_uri=evil, response_type="token"
        )
    )
    assert_no_redirect(unregistered)
    # Once client and redirect URI check out, an error goes back there, with state and iss.
    bad_type = await http.get(
        authorize_url(federated.base, client["client_id"], challenge, response_type="token")
    )
    assert bad_type.status_code == 302
    location = bad_type.headers["location"]
    assert location.startswith(REDIRECT + "?")
    assert "error=unsupported_response_type" in location and "state=st-1" in location
    # Denying consent also goes back only to the registered URI.
    denier = Browser(REDIRECT, approve=False)
    try:
        answer = await denier.authorize(
            authorize_url(federated.base, client["client_id"], challenge)
        )
    finally:
        await denier.aclose()
    assert answer["error"] == "access_denied" and answer["state"] == "st-1"


@pytest.mark.anyio
async def test_registration_refuses_unsafe_redirect_uris_and_unknown_grants(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    cases = [
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://app.example/cb#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT], "grant_types": ["implicit"]}, "invalid_client_metadata"),
        (
            {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
    ]
    for body, error in cases:
        response = await http.post(f"{federated.base}/register", json=body)
        assert response.status_code == 400, body
        assert response.json()["error"] == error, body
    confidential = await http.post(f"{federated.base}/register", json={"redirect_uris": [REDIRECT]})
    assert confidential.status_code == 201
    assert confidential.json()["token_endpoint_auth_method"] == "client_secret_basic"
    assert confidential.json()["client_secret"]


@pytest.mark.anyio
async def test_a_confidential_client_must_authenticate_at_the_token_endpoint(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    registered = (
        await http.post(f"{federated.base}/register", json={"redirect_uris": [REDIRECT]})
    ).json()
    verifier, challenge = pkce_pair()
    code = await signed_in_code(federated.base, registered["client_id"], challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
    }
    wrong = await http.post(
        f"{federated.base}/token", data=form, auth=(registered["client_id"], "wrong")
    )
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    right = await http.post(
        f"{federated.base}/token",
        data=form,
        auth=(registered["client_id"], registered["client_secret"]),
    )
    assert right.status_code == 200, right.text


@pytest.mark.anyio
async def test_revoking_a_refresh_token_revokes_its_access_tokens(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    client = await register(http, federated.base)
    issued = await tokens_for(http, federated.base, client["client_id"])
    revoked = await http.post(
        f"{federated.base}/revoke",
        data={"token": issued["refresh_token"], "client_id": client["client_id"]},
    )
    assert revoked.status_code == 200
    assert (await call_whoami(http, federated.mcp_url, issued["access_token"])).status_code == 401
    refresh = await token(
        http,
        federated.base,
        grant_type="refresh_token",
        refresh_token=issued["refresh_token"],
        client_id=client["client_id"],
    )
    assert refresh.status_code == 400
    unknown = await http.post(
        f"{federated.base}/revoke", data={"token": "nonsense", "client_id": client["client_id"]}
    )
    assert unknown.status_code == 200  # RFC 7009: unknown tokens are not an error


@pytest.mark.anyio
async def test_signing_keys_rotate_and_old_tokens_stay_valid(
    federated: Federated, http: httpx.AsyncClient
) -> None:
    from mcpkit.auth.server.keys import KEYS_KEY

    client = await register(http, federated.base)
    before = await tokens_for(http, federated.base, client["client_id"])
    old_kid = header_of(before["access_token"])["kid"]

    def age(records: Any) -> Any:  # the current key is now past its rotation date
        return [{**r, "created": r["created"] - 31 * 86400} for r in records]

    await federated.state.update_json(KEYS_KEY, age)
    after = await tokens_for(http, federated.base, client["client_id"])
    new_kid = header_of(after["access_token"])["kid"]
    assert new_kid != old_kid
    kids = [k["kid"] for k in (await http.get(f"{federated.base}/jwks.json")).json()["keys"]]
    assert old_kid in kids and new_kid in kids
    assert (await call_whoami(http, federated.mcp_url, before["access_token"])).status_code == 200
    assert (await call_whoami(http, federated.mcp_url, after["access_token"])).status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["client_secret_post", "client_secret_basic"])
async def test_the_upstream_client_secret_goes_as_the_provider_registered_it(
    federated: Federated, http: httpx.AsyncClient, method: str
) -> None:
    from mcpkit.auth.server.upstream import Transaction

    upstream = github(
        CLIENT_ID, CLIENT_SECRET, base_url=federated.github_base, api_url=federated.github_base
    )
    upstream.token_auth = method
    tx = Transaction.new()
    callback = "http://127.0.0.1:1/oauth/callback"
    signed_in = await http.get(await upstream.authorization_url(callback, tx))
    code = dict(parse_qsl(urlsplit(signed_in.headers["location"]).query))["code"]
    identity = await upstream.identify(code, callback, tx)
    assert identity.subject == "4242"
    assert (
        federated.github.secret_by[-1]
        == {"client_secret_post": "post", "client_secret_basic": "basic"}[method]
    )
