"""mcpkit.serverless.lambda_handler driven with AWS's documented event shapes.

Each handler is what a Lambda container builds at import time; two handlers built from
two separate ``Server`` objects stand for two cold containers: they share nothing but
the process environment (``MCPKIT_SEALING_KEYS``), as two containers of one function do.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("mangum")

from events import SHAPES, Reply, context, event, meta, request_event

from mcpkit import Context, Server
from mcpkit.serverless import ServerlessError, lambda_handler
from support.mcp import modern_headers

KEY_ENV = "MCPKIT_SEALING_KEYS"
ELICIT: dict[str, Any] = {"elicitation": {"form": {}}}


def make_server(lifespans: list[str] | None = None) -> Server:
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        if lifespans is not None:
            lifespans.append("enter")
        yield

    server = Server("lambda-test", "1.0.0", lifespan=lifespan)

    @server.tool
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool
    async def progress_echo(text: str, ctx: Context) -> str:
        """Report one progress notification, then echo the text."""
        await ctx.report_progress(1, 1)
        return text

    @server.tool
    async def confirm_delete(path: str, ctx: Context) -> str:
        """Delete after the user confirms (an MRTR round)."""
        answer = await ctx.elicit(
            f"Delete {path}?",
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            key="confirm",
        )
        ok = answer.get("action") == "accept" and (answer.get("content") or {}).get("ok")
        return f"deleted {path}" if ok else f"kept {path}"

    return server


@pytest.fixture(autouse=True)
def sealing_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv(KEY_ENV, "test-secret-shared-by-every-container")
    monkeypatch.delenv("MCPKIT_ALLOWED_HOSTS", raising=False)
    monkeypatch.chdir(tmp_path)  # a key file in the working directory must play no part


def call(handler: Any, shape: str, method: str, params: dict[str, Any], rid: int = 1) -> Reply:
    message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return Reply(handler(request_event(shape, message), context()))


@pytest.mark.parametrize("shape", SHAPES)
def test_server_discover(shape: str) -> None:
    handler = lambda_handler(make_server())
    reply = call(handler, shape, "server/discover", {"_meta": meta()})
    assert reply.status == 200
    result = reply.json()["result"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "lambda-test"
    assert result["supportedVersions"] == ["2026-07-28"]  # no legacy without Redis
    assert "tools" in result["capabilities"]


@pytest.mark.parametrize("shape", SHAPES)
def test_tools_call(shape: str) -> None:
    handler = lambda_handler(make_server())
    params = {"name": "echo", "arguments": {"text": f"hi {shape}"}, "_meta": meta()}
    reply = call(handler, shape, "tools/call", params)
    assert reply.status == 200
    body = reply.json()
    assert body["id"] == 1
    assert body["result"]["content"] == [{"type": "text", "text": f"hi {shape}"}]


def test_mrtr_round_trip_across_two_containers() -> None:
    first = lambda_handler(make_server())
    second = lambda_handler(make_server())
    params: dict[str, Any] = {
        "name": "confirm_delete",
        "arguments": {"path": "/tmp/report.txt"},
        "_meta": meta(ELICIT),
    }
    asked = call(first, "http_v2", "tools/call", params).json()["result"]
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"]["confirm"]["method"] == "elicitation/create"
    retry = {
        **params,
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
        "requestState": asked["requestState"],
    }
    done = call(second, "function_url", "tools/call", retry, rid=2)
    assert done.status == 200
    result = done.json()["result"]
    assert result["resultType"] == "complete"
    assert result["content"][0]["text"] == "deleted /tmp/report.txt"


def test_mrtr_state_from_another_deployment_key_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = lambda_handler(make_server())
    params: dict[str, Any] = {"name": "confirm_delete", "arguments": {"path": "/x"}}
    params["_meta"] = meta(ELICIT)
    asked = call(first, "http_v2", "tools/call", params).json()["result"]
    monkeypatch.setenv(KEY_ENV, "another-deployments-secret")
    other = lambda_handler(make_server())
    retry = {
        **params,
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
        "requestState": asked["requestState"],
    }
    reply = call(other, "http_v2", "tools/call", retry, rid=2)
    error = reply.json()["error"]
    assert error["code"] == -32602
    assert "unknown key" in error["message"]
    assert reply.status == 400


def test_without_a_shared_key_the_handler_is_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ServerlessError, match="MCPKIT_SEALING_KEYS"):
        lambda_handler(make_server())


def test_task_backed_tools_are_refused() -> None:
    server = make_server()

    @server.tool(task="optional")
    async def render(pages: int) -> str:
        """A long job."""
        return "done"

    with pytest.raises(ServerlessError, match=r"task-backed tools cannot run serverless.*render"):
        lambda_handler(server)


def test_legacy_sessions_need_a_shared_backend() -> None:
    with pytest.raises(ServerlessError, match="shared state backend"):
        lambda_handler(make_server(), legacy=True)


def test_legacy_requests_get_a_clear_refusal_without_a_backend() -> None:
    handler = lambda_handler(make_server())
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"},
        },
    }
    headers = {"content-type": "application/json", "accept": "application/json"}
    reply = Reply(handler(event("http_v2", init, headers), context()))
    assert reply.status == 400
    assert reply.json()["error"]["message"] == "This server speaks only protocol 2026-07-28"


def test_lifespan_runs_once_per_container() -> None:
    entered: list[str] = []
    handler = lambda_handler(make_server(entered))
    for rid in range(3):
        params = {"name": "echo", "arguments": {"text": "x"}, "_meta": meta()}
        assert call(handler, "function_url", "tools/call", params, rid).status == 200
    assert entered == ["enter"]


def test_sse_answer_is_one_json_response_when_json_is_accepted() -> None:
    handler = lambda_handler(make_server())
    params = {
        "name": "progress_echo",
        "arguments": {"text": "p"},
        "_meta": {**meta(), "progressToken": "t1"},
    }
    reply = call(handler, "http_v2", "tools/call", params)
    assert reply.status == 200
    assert reply.json()["result"]["content"][0]["text"] == "p"


def test_sse_only_client_gets_the_whole_stream_in_one_body() -> None:
    handler = lambda_handler(make_server())
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "progress_echo",
            "arguments": {"text": "p"},
            "_meta": {**meta(), "progressToken": "t1"},
        },
    }
    headers = modern_headers(message, Accept="text/event-stream")
    reply = Reply(handler(event("rest_v1", message, headers), context()))
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/event-stream"
    data = [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]
    assert data[0]["method"] == "notifications/progress"
    assert data[-1]["id"] == 7 and data[-1]["result"]["content"][0]["text"] == "p"


def test_listen_is_refused_naming_the_alternative() -> None:
    handler = lambda_handler(make_server())
    params = {"notifications": {"toolsListChanged": True}, "_meta": meta()}
    reply = call(handler, "function_url", "subscriptions/listen", params, rid=41)
    assert reply.status == 400
    assert reply.json()["id"] == 41
    error = reply.json()["error"]
    assert error["code"] == -32600
    assert "subscriptions/listen needs a streaming response" in error["message"]
    assert "poll" in error["message"] and "Cloud Run" in error["message"]


def test_get_stream_is_refused() -> None:
    handler = lambda_handler(make_server())
    headers = {"accept": "text/event-stream", "mcp-session-id": "abc"}
    reply = Reply(handler(event("http_v2", None, headers, method="GET"), context()))
    assert reply.status == 405
    assert reply.headers["allow"] == "POST"  # no legacy sessions without Redis: no DELETE
    assert reply.json()["error"]["code"] == -32600


def test_foreign_host_is_refused_and_custom_domains_are_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": meta()},
    }
    headers = modern_headers(message)
    handler = lambda_handler(make_server())
    for host in ("evil.example", "evil-on.aws", "mcp.example.com"):
        reply = Reply(handler(event("http_v2", message, headers, host=host), context()))
        assert reply.status == 403, host
        assert "DNS rebinding" in reply.json()["error"]["message"]
    monkeypatch.setenv("MCPKIT_ALLOWED_HOSTS", "mcp.example.com, *.tools.example.org")
    handler = lambda_handler(make_server())
    for host in ("mcp.example.com", "eu.tools.example.org:443"):
        reply = Reply(handler(event("http_v2", message, headers, host=host), context()))
        assert reply.status == 200, host
    reply = Reply(handler(event("http_v2", message, headers, host="tools.example.org"), context()))
    assert reply.status == 403


def test_bad_input_gets_an_error_and_the_container_keeps_serving() -> None:
    handler = lambda_handler(make_server())
    headers = modern_headers(None, Mcp_Method="tools/call")
    reply = Reply(handler(event("function_url", "{not json", headers), context()))
    assert reply.status == 400
    assert reply.json()["error"]["code"] == -32700
    params = {"name": "echo", "arguments": {"text": "still here"}, "_meta": meta()}
    reply = call(handler, "function_url", "tools/call", params, rid=2)
    assert reply.json()["result"]["content"][0]["text"] == "still here"


def test_base64_encoded_body() -> None:
    """API Gateway base64-encodes bodies when binary media types include */*."""
    handler = lambda_handler(make_server())
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "b64"}, "_meta": meta()},
    }
    shaped = request_event("rest_v1", message)
    shaped["body"] = base64.b64encode(shaped["body"].encode()).decode()
    shaped["isBase64Encoded"] = True
    reply = Reply(handler(shaped, context()))
    assert reply.json()["result"]["content"][0]["text"] == "b64"
