"""A legacy (2025-11-25) session across two Lambda containers that share only Redis.

With a Redis state backend, serverless mode serves legacy sessions too: the session is
created by one container and used and ended by another, as a round-robin of cold
containers would do.  Skipped when no ``redis-server`` binary is installed; the server is
a real one on 127.0.0.1, started for this module.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mangum")
pytest.importorskip("redis")
if shutil.which("redis-server") is None:
    pytest.skip("redis-server is not installed", allow_module_level=True)

from events import Reply, context, event

from mcpkit import Context, Server
from mcpkit.serverless import lambda_handler

LEGACY = "2025-11-25"


def make_server(url: str) -> Server:
    server = Server("lambda-legacy", "1.0.0", state=url)

    @server.tool
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool
    async def ask(ctx: Context) -> str:
        """Asks the client (a server-to-client request in a legacy session)."""
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        return str(await ctx.elicit("ok?", schema, key="ok"))

    return server


def post(handler: Any, body: dict[str, Any], session: str | None = None) -> Reply:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session is not None:
        headers["mcp-session-id"] = session
        headers["mcp-protocol-version"] = LEGACY
    return Reply(handler(event("http_v2", body, headers), context()))


def test_legacy_session_across_two_containers(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("MCPKIT_SEALING_KEYS", raising=False)  # the keys come from Redis
    monkeypatch.chdir(tmp_path)
    first = lambda_handler(make_server(redis_url))
    second = lambda_handler(make_server(redis_url))
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "legacy-client", "version": "1.0"},
        },
    }
    reply = post(first, init)
    assert reply.status == 200
    assert reply.json()["result"]["protocolVersion"] == LEGACY
    session = reply.headers["mcp-session-id"]

    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(second, note, session).status == 202

    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "via redis"}},
    }
    reply = post(second, call, session)
    assert reply.status == 200
    assert reply.json()["result"]["content"] == [{"type": "text", "text": "via redis"}]
    reply = post(first, {**call, "id": 3}, session)
    assert reply.json()["result"]["content"][0]["text"] == "via redis"

    headers = {"mcp-session-id": session, "mcp-protocol-version": LEGACY}
    ended = Reply(second(event("http_v2", None, headers, method="DELETE"), context()))
    assert ended.status in (200, 204)
    gone = post(first, {**call, "id": 4}, session)
    assert gone.status == 404


def test_sealing_keys_come_from_redis_when_the_environment_has_none(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("MCPKIT_SEALING_KEYS", raising=False)
    monkeypatch.chdir(tmp_path)
    servers = [make_server(redis_url), make_server(redis_url)]
    handlers = [lambda_handler(s) for s in servers]
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "server/discover",
    }
    for handler in handlers:  # the first request starts each container (lifespan)
        reply = Reply(handler(event("function_url", message, headers), context()))
        assert "2025-11-25" in reply.json()["result"]["supportedVersions"]  # legacy on Redis
    sealed = servers[0].keyring.seal({"r": {}}, "binding")
    assert servers[1].keyring.open(sealed, "binding")["r"] == {}
    assert not (tmp_path / ".mcpkit").exists()


def test_legacy_server_to_client_request_fails_at_once(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A legacy elicitation needs the SSE stream, which Lambda would deliver only after the
    function returned: the call fails at once with an error instead of waiting for an
    answer that cannot come until the function's timeout."""
    monkeypatch.setenv("MCPKIT_SEALING_KEYS", "k")
    monkeypatch.chdir(tmp_path)
    handler = lambda_handler(make_server(redis_url))
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "legacy-client", "version": "1.0"},
        },
    }
    session = post(handler, init).headers["mcp-session-id"]
    assert (
        post(handler, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).status
        == 202
    )
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}
    error = post(handler, call, session).json()["error"]
    assert error["code"] == -32603
    assert "elicitation/create" in error["message"]
