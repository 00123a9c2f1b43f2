"""HTTP 406: a POST whose ``Accept`` admits neither ``application/json`` nor
``text/event-stream`` is refused before anything runs, on both eras.  Against ``mcpkit
serve tests/servers/middleware_server.py --http`` on 127.0.0.1 (its middleware records
every tools/call it sees, so a refused call must leave no trace)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from mcpkit.transports.http.asgi import accepts_an_answer
from support.httpclient import LegacySessionClient, McpHttp
from support.mcp import legacy_request, modern_headers
from support.servers import SERVERS_DIR, ProcessServer, http_subprocess

FIXTURE = SERVERS_DIR / "middleware_server.py"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProcessServer, McpHttp]]:
    with http_subprocess(tmp_path_factory.mktemp("accept"), FIXTURE) as running:
        client = McpHttp(running.url, running.alive)
        yield running, client
        client.close()


def events(server: ProcessServer) -> int:
    path = server.output.parent / "middleware-events.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize(
    ("accept", "admitted"),
    [
        (None, True),
        ("application/json, text/event-stream", True),
        ("application/json", True),
        ("text/event-stream", True),
        ("*/*", True),
        ("application/*;q=0.5", True),
        ("TEXT/EVENT-STREAM; charset=utf-8", True),
        ("text/html", False),
        ("image/png, text/plain", False),
        ("application/json;q=0", False),
        ("application/json;q=0, text/event-stream;q=0", False),
        ("application/xml", False),
    ],
)
def test_accept_ranges(accept: str | None, admitted: bool) -> None:
    assert accepts_an_answer(accept) is admitted


def test_modern_post_gets_406_and_nothing_runs(served: tuple[ProcessServer, McpHttp]) -> None:
    server, client = served
    before = events(server)
    message = client.modern_request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    response = client.post_raw(json.dumps(message), modern_headers(message, Accept="text/html"))
    assert response.status_code == 406
    assert response.json()["error"]["code"] == -32600
    assert events(server) == before
    ok = client.post_raw(json.dumps(message), modern_headers(message))
    assert ok.status_code == 200 and events(server) > before


def test_legacy_post_gets_406(served: tuple[ProcessServer, McpHttp]) -> None:
    server, client = served
    session = LegacySessionClient(client)
    before = events(server)
    message = legacy_request(
        client.next_id(), "tools/call", {"name": "echo", "arguments": {"text": "x"}}
    )
    response = client.post_json(message, session.headers(Accept="image/png"))
    assert response.status_code == 406
    assert events(server) == before
