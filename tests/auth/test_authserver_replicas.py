"""Two replicas of one authorization server on a shared state backend (a SQLite file, a
real Redis): a sign-in started on one is finished on the other, the keys are the same, and
one-use records stay one-use across replicas (a code redeemed on one replica is refused,
and its tokens revoked, when replayed on the other)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from authkit import REDIRECT, Browser, authorize_url, call_whoami, pkce_pair, register
from github_double import CLIENT_ID, CLIENT_SECRET, GitHubDouble

from mcpkit.auth.server import github
from support.servers import ThreadServer, serve_app

pytest.importorskip("joserfc")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "redis"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/authserver.db"
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
def replicas(state_url: str) -> Iterator[tuple[str, str]]:
    """Two replicas answering for one issuer (the first one's URL)."""
    import federated_server

    with ThreadServer(GitHubDouble()) as gh:
        upstream = github(CLIENT_ID, CLIENT_SECRET, base_url=gh.base, api_url=gh.base)
        issuer: dict[str, str] = {}

        def make(base: str) -> Any:
            issuer.setdefault("url", base)
            return federated_server.build_app(issuer["url"], upstream, state=state_url)

        with serve_app(make) as (first, _), serve_app(make) as (second, _):
            yield first, second


@pytest.mark.anyio
async def test_a_sign_in_crosses_replicas_and_a_code_stays_one_use(
    replicas: tuple[str, str],
) -> None:
    first, second = replicas
    async with httpx.AsyncClient(trust_env=False, timeout=20.0) as http:
        client = await register(http, second)  # registered on one, known to both
        verifier, challenge = pkce_pair()
        browser = Browser(REDIRECT)
        try:
            answer = await browser.authorize(authorize_url(first, client["client_id"], challenge))
        finally:
            await browser.aclose()
        form = {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "code_verifier": verifier,
            "redirect_uri": REDIRECT,
            "client_id": client["client_id"],
        }
        issued = await http.post(f"{second}/token", data=form)
        assert issued.status_code == 200, issued.text
        access = issued.json()["access_token"]
        first_keys = (await http.get(f"{first}/jwks.json")).json()
        assert first_keys == (await http.get(f"{second}/jwks.json")).json()
        assert (await call_whoami(http, f"{first}/mcp", access)).status_code == 200
        replay = await http.post(f"{first}/token", data=form)
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        assert (await call_whoami(http, f"{second}/mcp", access)).status_code == 401


@pytest.mark.anyio
async def test_one_code_redeemed_at_both_replicas_at_once_yields_no_usable_token(
    replicas: tuple[str, str],
) -> None:
    first, second = replicas
    async with httpx.AsyncClient(trust_env=False, timeout=20.0) as http:
        client = await register(http, first)
        verifier, challenge = pkce_pair()
        browser = Browser(REDIRECT)
        try:
            answer = await browser.authorize(authorize_url(first, client["client_id"], challenge))
        finally:
            await browser.aclose()
        form = {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "code_verifier": verifier,
            "redirect_uri": REDIRECT,
            "client_id": client["client_id"],
        }
        replies: list[httpx.Response] = []

        async def redeem(base: str) -> None:
            replies.append(await http.post(f"{base}/token", data=form))

        async with anyio.create_task_group() as group:
            group.start_soon(redeem, first)
            group.start_soon(redeem, second)
        winners = [r for r in replies if r.status_code == 200]
        assert len(winners) <= 1  # the code is one-use across replicas (cas)
        assert any(r.json().get("error") == "invalid_grant" for r in replies)
        # The second redemption is a replay: whatever the first one got is revoked.
        for won in winners:
            refused = await call_whoami(http, f"{second}/mcp", won.json()["access_token"])
            assert refused.status_code == 401
