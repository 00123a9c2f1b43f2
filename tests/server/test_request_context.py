"""``ctx.request`` on every transport and both eras: HTTP headers (an empty mapping on
stdio), client info and capabilities, era, protocol version and request id.  Real
subprocesses of ``tests/servers/middleware_server.py`` (pipes, a socket on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.httpclient import LegacySessionClient, McpHttp
from support.mcp import CLIENT_INFO, initialize_request, legacy_request, modern_request
from support.servers import SERVERS_DIR, StdioProcess, http_subprocess

FIXTURE = SERVERS_DIR / "middleware_server.py"


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHttp]:
    with http_subprocess(tmp_path_factory.mktemp("request-http"), FIXTURE) as running:
        client = McpHttp(running.url, running.alive)
        yield client
        client.close()


def structured(result: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = result["structuredContent"]
    return value


def test_stdio_has_no_headers_on_either_era(tmp_path: Path) -> None:
    proc = StdioProcess(FIXTURE, tmp_path)
    try:
        caps: dict[str, Any] = {"roots": {}}
        proc.send(modern_request("m-1", "tools/call", {"name": "whoami"}, capabilities=caps))
        info = structured(proc.recv()["result"])
        assert info == {
            "tenant": None,
            "header_count": 0,
            "era": "modern",
            "version": "2026-07-28",
            "client": CLIENT_INFO["name"],
            "caps": ["roots"],
            "id": "m-1",
            "method": "tools/call",
        }
        proc.send(initialize_request(1, capabilities={"sampling": {}}))
        proc.recv()
        proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.send(legacy_request(2, "tools/call", {"name": "whoami"}))
        info = structured(proc.recv()["result"])
        assert info["era"] == "legacy" and info["version"] == "2025-11-25"
        assert info["header_count"] == 0 and info["tenant"] is None
        assert info["client"] == CLIENT_INFO["name"] and info["caps"] == ["sampling"]
        assert info["id"] == 2
    finally:
        proc.stop()


def test_http_modern_sees_the_headers(http: McpHttp) -> None:
    reply = http.modern("tools/call", {"name": "whoami"}, headers={"X-Tenant": "acme"})
    info = structured(reply.result)
    assert info["tenant"] == "acme" and info["header_count"] > 3
    assert info["era"] == "modern" and info["client"] == CLIENT_INFO["name"]
    assert isinstance(info["id"], int)


def test_http_legacy_sees_the_headers(http: McpHttp) -> None:
    session = LegacySessionClient(http, capabilities={"elicitation": {}})
    message = legacy_request(http.next_id(), "tools/call", {"name": "whoami"})
    response = http.post_json(message, session.headers(**{"X-Tenant": "globex"}))
    info = response.json()["result"]["structuredContent"]
    assert info["tenant"] == "globex" and info["era"] == "legacy"
    assert info["caps"] == ["elicitation"] and info["id"] == message["id"]
