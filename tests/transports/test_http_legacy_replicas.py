"""2025-11-25 sessions across two ``mcpkit serve --http`` processes sharing one SQLite file
(the default state backend), one client talking to both: what one replica changes in the
session, the other sees on its very next request, although a replica keeps using a
session it read while nothing at all was written to the database since."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.httpclient import LegacySessionClient, McpHttp, Reply
from support.servers import ProcessServer, http_subprocess


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[ProcessServer, ProcessServer]]:
    # One server, one user: both use its state.db in the per-user data directory.
    with http_subprocess(tmp_path) as first, http_subprocess(tmp_path) as second:
        yield first, second


@pytest.fixture
def clients(replicas: tuple[ProcessServer, ProcessServer]) -> Iterator[tuple[McpHttp, McpHttp]]:
    """One client's connections to each replica."""
    a, b = replicas
    http_a, http_b = McpHttp(a.url, a.alive), McpHttp(b.url, b.alive)
    yield http_a, http_b
    http_a.close()
    http_b.close()


def log_messages(reply: Reply) -> list[str]:
    return [
        n["params"]["data"] for n in reply.notifications if n["method"] == "notifications/message"
    ]


def test_a_level_set_on_one_replica_holds_on_the_other(clients: tuple[McpHttp, McpHttp]) -> None:
    http_a, http_b = clients
    on_a = LegacySessionClient(http_a)
    on_b = copy.copy(on_a)
    on_b.http = http_b
    before = on_a.request("tools/call", {"name": "test_tool_with_logging"})
    assert log_messages(before) == [], before.messages  # no level set: no log messages
    assert on_b.request("logging/setLevel", {"level": "info"}).result == {}
    after = on_a.request("tools/call", {"name": "test_tool_with_logging"})
    assert log_messages(after), after.messages
    assert after.result["content"]


def test_a_session_deleted_on_one_replica_is_gone_on_the_other(
    replicas: tuple[ProcessServer, ProcessServer], clients: tuple[McpHttp, McpHttp]
) -> None:
    http_a, http_b = clients
    on_a = LegacySessionClient(http_a)
    assert on_a.request("tools/list").result["tools"]
    deleted = http_b.http.delete(replicas[1].url, headers=on_a.headers())
    assert deleted.status_code in (200, 204), deleted.text
    gone = http_a.post_json({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}, on_a.headers())
    assert gone.status_code == 404, gone.text
