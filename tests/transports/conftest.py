"""Fixtures shared by the transport tests: the conformance fixture server as a real
``mcpkit serve --http`` process (one per module; a module may serve its own app as
``server`` instead), and a raw HTTP client to it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

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


class Served(Protocol):
    """A server under test: a process (``ProcessServer``) or a thread (``ThreadServer``)."""

    url: str

    def alive(self) -> bool: ...


@pytest.fixture
def client(server: Served) -> Iterator[McpHttp]:
    """A raw MCP-over-HTTP client of ``server``, the module's own or the process above
    (closed after the test)."""
    http = McpHttp(server.url, server.alive)
    yield http
    http.close()
