"""The ID token of an OpenID provider is checked before anyone is signed in: signature
against the provider's published keys, ``iss``, ``aud`` (this server's client), ``exp``
and ``nonce`` (the one this sign-in sent).  A spoiled token ends the sign-in with
``access_denied`` at the MCP client's redirect URI, and no code is issued."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("joserfc")

from authkit import REDIRECT, Browser, authorize_url, pkce_pair, register
from oidc_double import CLIENT_ID, CLIENT_SECRET, OidcDouble

from mcpkit.auth.server import OidcUpstream
from mcpkit.state.memory import MemoryBackend
from support.servers import ThreadServer, serve_app


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[str, OidcDouble]]:
    import federated_server

    with ThreadServer(make_app=OidcDouble, lifespan="off") as provider:
        double: OidcDouble = provider.app

        def make(base: str) -> Any:
            upstream = OidcUpstream(
                client_id=CLIENT_ID, client_secret=CLIENT_SECRET, issuer=provider.base
            )
            return federated_server.build_app(base, upstream, state=MemoryBackend())

        with serve_app(make) as (base, _):
            yield base, double


async def sign_in(base: str) -> dict[str, str]:
    async with httpx.AsyncClient(trust_env=False) as http:
        client = await register(http, base)
    _, challenge = pkce_pair()
    browser = Browser(REDIRECT)
    try:
        return await browser.authorize(authorize_url(base, client["client_id"], challenge))
    finally:
        await browser.aclose()


@pytest.mark.anyio
async def test_a_valid_id_token_signs_the_user_in(stack: tuple[str, OidcDouble]) -> None:
    base, double = stack
    double.spoil, double.foreign_key = {}, False
    answer = await sign_in(base)
    assert "code" in answer, answer


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("spoil", "foreign_key"),
    [
        ({"aud": "another-client"}, False),
        ({"nonce": "a-nonce-of-another-sign-in"}, False),
        ({"iss": "https://evil.example"}, False),
        ({"exp": int(time.time()) - 3600}, False),
        ({}, True),
    ],
    ids=["another-audience", "another-nonce", "another-issuer", "expired", "unpublished-key"],
)
async def test_a_spoiled_id_token_signs_nobody_in(
    stack: tuple[str, OidcDouble], spoil: dict[str, Any], foreign_key: bool
) -> None:
    base, double = stack
    double.spoil, double.foreign_key = spoil, foreign_key
    try:
        answer = await sign_in(base)
    finally:
        double.spoil, double.foreign_key = {}, False
    assert "code" not in answer
    assert answer["error"] == "access_denied"
    assert "ID token" in answer["error_description"]
