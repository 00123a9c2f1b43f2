"""Fixtures shared by the transport tests: the conformance fixture server as a real
``mcpkit serve --http`` process (one per module), and a raw HTTP client to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.httpclient import McpHttp
from support.servers import ProcessServer, http_subprocess


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ProcessServer]:
    """``mcpkit serve TARGET --http`` as a user runs it, in a folder named after the module."""
    folder = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with http_subprocess(folder) as running:
        yield running


@pytest.fixture
def client(server: ProcessServer) -> Iterator[McpHttp]:
    """A raw MCP-over-HTTP client of ``server`` (closed after the test)."""
    http = McpHttp(server.url, server.alive)
    yield http
    http.close()
