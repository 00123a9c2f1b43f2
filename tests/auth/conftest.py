"""Fixtures for the auth tests: ``local_as`` is the test-double authorization server from
``examples/auth``; ``stack`` adds the example protected MCP server, verifying JWTs against
that AS's JWKS.  Both run on uvicorn over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from authkit import LocalAuthorizationServer, Stack

from support.servers import serve_app


@pytest.fixture(scope="module")
def local_as() -> Iterator[LocalAuthorizationServer]:
    with serve_app(lambda base: LocalAuthorizationServer(base)) as (_, app):
        yield app


@pytest.fixture(scope="module")
def stack(local_as: LocalAuthorizationServer) -> Iterator[Stack]:
    import protected_server

    with serve_app(lambda base: protected_server.build_app(local_as.issuer, f"{base}/mcp")) as (
        base,
        app,
    ):
        yield Stack(local_as.issuer, local_as, f"{base}/mcp", app)
