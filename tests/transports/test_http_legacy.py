"""Streamable HTTP, 2025-11-25 (legacy) path: sessions, server->client requests over SSE,
the standalone GET stream, resumable SSE and the session bounds.

The defaults are exercised on ``mcpkit serve ... --http`` as a subprocess; the bounds
(max_sessions, idle expiry) on an in-process uvicorn with small limits.  Every JSON-RPC
message the server emits is validated against the official 2025-11-25 schema.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from mcpkit import Server
from mcpkit.protocol.sse import KEEPALIVE_SECONDS
from mcpkit.transports.http import HttpOptions, McpHttpApp
from mcpkit.transports.http.sessions import MAX_STREAMS_PER_SESSION
from support.httpclient import LegacySessionClient, McpHttp, expect_error
from support.mcp import (
    ACCEPT_BOTH,
    check_messages,
    initialize_request,
    iter_sse,
    legacy_request,
    reply_messages,
)
from support.schema import LEGACY, validate_outgoing
from support.servers import ThreadServer

SAMPLING_ANSWER = {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}


@pytest.fixture
def session(client: McpHttp) -> LegacySessionClient:
    return LegacySessionClient(client, {"sampling": {}, "elicitation": {}, "roots": {}})


# --------------------------------------------------------------------------- handshake


def test_initialize_mints_a_visible_ascii_session_id(session: LegacySessionClient) -> None:
    sid = session.session_id
    assert len(sid) >= 16
    assert all(0x21 <= ord(ch) <= 0x7E for ch in sid), sid
    assert session.init_result["protocolVersion"] == "2025-11-25"
    assert session.init_result["serverInfo"]["name"] == "mcpkit-conformance-server"
    assert "tools" in session.init_result["capabilities"]


def test_session_ids_are_unique(client: McpHttp) -> None:
    ids = {LegacySessionClient(client).session_id for _ in range(20)}
    assert len(ids) == 20


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
def test_initialize_version_negotiation(client: McpHttp, requested: str, answered: str) -> None:
    response = client.post_json(
        initialize_request(1, requested),
        {"Content-Type": "application/json", "Accept": ACCEPT_BOTH},
    )
    assert response.status_code == 200
    validate_outgoing(LEGACY, response.json(), request_method="initialize")
    assert response.json()["result"]["protocolVersion"] == answered


def test_requests_in_a_session(session: LegacySessionClient) -> None:
    tools = session.request("tools/list")
    assert tools.response.headers["content-type"].startswith("application/json")
    assert "ttlMs" not in tools.result and "resultType" not in tools.result
    assert session.request("ping").result == {}
    call = session.request("tools/call", {"name": "test_simple_text"})
    assert call.result["content"][0]["type"] == "text"
    read = session.request("resources/read", {"uri": "test://static-text"})
    assert read.result["contents"][0]["text"]


def test_legacy_resource_not_found_is_32002(session: LegacySessionClient) -> None:
    reply = session.request("resources/read", {"uri": "test://nope"})
    assert reply.final["error"]["code"] == -32002


def test_modern_only_methods_are_not_found_in_a_session(session: LegacySessionClient) -> None:
    reply = session.request("server/discover")
    assert reply.final["error"]["code"] == -32601


def test_second_initialize_on_a_session_is_refused(session: LegacySessionClient) -> None:
    reply = session.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"},
        },
    )
    assert reply.final["error"]["code"] == -32600
    assert session.request("ping").result == {}


# --------------------------------------------------------------------------- session errors


def test_missing_session_id_is_400(client: McpHttp, session: LegacySessionClient) -> None:
    headers = session.headers()
    del headers["Mcp-Session-Id"]
    message = legacy_request(7, "tools/list")
    expect_error(client.post_json(message, headers), 400, -32600, LEGACY, request_id=7)
    client.assert_healthy()


@pytest.mark.parametrize("sid", ["unknown-session", "x" * 2000, "%00%0a"])
def test_unknown_session_is_404(client: McpHttp, session: LegacySessionClient, sid: str) -> None:
    message = legacy_request(8, "tools/list")
    response = client.post_json(message, session.headers(**{"Mcp-Session-Id": sid}))
    error = expect_error(response, 404, -32600, LEGACY, request_id=8)
    assert sid not in error["message"]  # never echoed raw
    client.assert_healthy()


def test_delete_ends_the_session(client: McpHttp, session: LegacySessionClient) -> None:
    response = client.http.delete(client.url, headers=session.headers())
    assert response.status_code == 200
    after = client.post_json(legacy_request(9, "tools/list"), session.headers())
    expect_error(after, 404, -32600, LEGACY, request_id=9)
    again = client.http.delete(client.url, headers=session.headers())
    expect_error(again, 404, -32600, LEGACY)
    get = client.http.get(client.url, headers=session.headers(Accept="text/event-stream"))
    expect_error(get, 404, -32600, LEGACY)
    client.assert_healthy()


def test_delete_ends_the_sessions_open_get_stream(
    client: McpHttp, session: LegacySessionClient
) -> None:
    """A session that is gone (DELETE here; evicted or dropped by another replica alike)
    closes its standalone GET stream instead of leaving it open on a forgotten session."""
    ended = threading.Event()
    with client.http.stream(
        "GET", client.url, headers=session.headers(Accept="text/event-stream")
    ) as stream:
        assert stream.status_code == 200

        def read_to_the_end() -> None:
            try:
                for _ in stream.iter_lines():
                    pass
            except httpx.HTTPError:
                pass
            ended.set()

        threading.Thread(target=read_to_the_end, daemon=True).start()
        response = client.http.delete(client.url, headers=session.headers())
        assert response.status_code == 200
        # Before it ended only at the next keep-alive tick (when writing found it gone).
        assert ended.wait(KEEPALIVE_SECONDS / 2), "the deleted session's GET stream stayed open"
    client.assert_healthy()


def test_unsupported_legacy_version_header_is_400(
    client: McpHttp, session: LegacySessionClient
) -> None:
    response = client.post_json(
        legacy_request(10, "tools/list"), session.headers(**{"MCP-Protocol-Version": "2024-01-01"})
    )
    expect_error(response, 400, -32600, LEGACY, request_id=10)
    client.assert_healthy()


def test_notifications_and_responses_get_202(client: McpHttp, session: LegacySessionClient) -> None:
    for body in [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}},
        {"jsonrpc": "2.0", "method": "notifications/unknown/thing", "params": {"x": 1}},
        {"jsonrpc": "2.0", "id": "never-sent", "result": {}},  # stray response
    ]:
        response = client.post_json(body, session.headers())
        assert response.status_code == 202, (body, response.text)
        assert response.content == b""
    assert session.request("ping").result == {}


# --------------------------------------------------------------------------- SSE and requests


def test_sampling_request_is_answered_over_http(
    client: McpHttp, session: LegacySessionClient
) -> None:
    params = {"name": "test_sampling", "arguments": {"prompt": "Meaning of life?"}}
    with session.stream("tools/call", params) as (request, events, messages):
        sampling = next(messages)
        assert sampling["method"] == "sampling/createMessage"
        assert sampling["params"]["messages"][0]["content"]["text"] == "Meaning of life?"
        validate_outgoing(LEGACY, sampling)
        answer = client.post_json(
            {"jsonrpc": "2.0", "id": sampling["id"], "result": SAMPLING_ANSWER}, session.headers()
        )
        assert answer.status_code == 202
        final = next(messages)
        assert final["id"] == request["id"]
        assert final["result"]["content"][0]["text"] == "LLM response: 42"
    # every event of a resumable stream carries an id; the first one primes the stream
    assert events[0].data == "" and events[0].id and events[0].retry is not None
    assert all(e.id for e in events)


def test_client_error_answer_to_a_server_request(
    client: McpHttp, session: LegacySessionClient
) -> None:
    params = {"name": "test_sampling", "arguments": {"prompt": "x"}}
    with session.stream("tools/call", params) as (request, _events, messages):
        sampling = next(messages)
        client.post_json(
            {
                "jsonrpc": "2.0",
                "id": sampling["id"],
                "error": {"code": -1, "message": "user rejected sampling"},
            },
            session.headers(),
        )
        final = next(messages)
        assert final["id"] == request["id"]
        # the tool saw the refusal: either a tool error or a protocol error, never a hang
        assert final.get("result", {}).get("isError") or "error" in final


def test_progress_and_logging_on_sse(session: LegacySessionClient) -> None:
    assert session.request("logging/setLevel", {"level": "info"}).result == {}
    reply = session.request("tools/call", {"name": "test_tool_with_logging"})
    assert reply.response.headers["content-type"].startswith("text/event-stream")
    logs = [n["params"]["data"] for n in reply.notifications]
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    progress = session.request(
        "tools/call", {"name": "test_tool_with_progress", "_meta": {"progressToken": 5}}
    )
    assert [n["params"]["progress"] for n in progress.notifications] == [0, 50, 100]
    assert all(n["params"]["progressToken"] == 5 for n in progress.notifications)


def test_without_sse_accept_a_sampling_tool_fails_cleanly(
    client: McpHttp, session: LegacySessionClient
) -> None:
    message = legacy_request(
        77, "tools/call", {"name": "test_sampling", "arguments": {"prompt": "x"}}
    )
    response = client.post_json(message, session.headers(Accept="application/json"))
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    validate_outgoing(LEGACY, body, request_method="tools/call")
    assert body["id"] == 77
    assert body.get("result", {}).get("isError") or "error" in body


def test_get_stream_receives_list_changed(client: McpHttp, session: LegacySessionClient) -> None:
    headers = session.headers(Accept="text/event-stream")
    with client.http.stream("GET", client.url, headers=headers) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        second = client.http.get(client.url, headers=headers)
        expect_error(second, 409, -32600, LEGACY)  # one standalone stream per session
        assert session.request("tools/call", {"name": "test_trigger_tool_change"}).result
        for event in iter_sse(stream.iter_lines()):
            if event.data:
                note = json.loads(event.data)
                validate_outgoing(LEGACY, note)
                assert note == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                break


def test_server_request_travels_on_the_get_stream_when_the_post_cannot_stream(
    client: McpHttp,
) -> None:
    session = LegacySessionClient(client, {"sampling": {}})
    outcome: dict[str, Any] = {}
    message = legacy_request(
        55, "tools/call", {"name": "test_sampling", "arguments": {"prompt": "via GET"}}
    )

    def post_without_sse() -> None:
        outcome["response"] = client.post_json(message, session.headers(Accept="application/json"))

    with client.http.stream(
        "GET", client.url, headers=session.headers(Accept="text/event-stream")
    ) as stream:
        poster = threading.Thread(target=post_without_sse)
        poster.start()
        for event in iter_sse(stream.iter_lines()):
            if event.data:
                request = json.loads(event.data)
                validate_outgoing(LEGACY, request)
                assert request["method"] == "sampling/createMessage"
                answer = client.post_json(
                    {"jsonrpc": "2.0", "id": request["id"], "result": SAMPLING_ANSWER},
                    session.headers(),
                )
                assert answer.status_code == 202
                break
        poster.join(15)
    response = outcome["response"]
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    validate_outgoing(LEGACY, body, request_method="tools/call")
    assert body["id"] == 55
    assert body["result"]["content"][0]["text"] == "LLM response: 42"


def test_get_stream_needs_sse_accept(client: McpHttp, session: LegacySessionClient) -> None:
    response = client.http.get(client.url, headers=session.headers(Accept="application/json"))
    expect_error(response, 406, -32600, LEGACY)


def test_resumable_sse_with_last_event_id(client: McpHttp, session: LegacySessionClient) -> None:
    assert session.request("logging/setLevel", {"level": "info"}).result == {}
    seen: list[dict[str, Any]] = []
    with session.stream("tools/call", {"name": "test_reconnection"}) as (request, events, msgs):
        for message in msgs:
            seen.append(message)
        # the server closed the stream mid-call (no final response yet)
    assert [m.get("params", {}).get("data") for m in seen] == ["Before disconnect"]
    last_id = [e.id for e in events if e.id][-1]
    assert any(e.retry is not None for e in events)  # the client learns when to come back
    resumed: list[dict[str, Any]] = []
    headers = session.headers(Accept="text/event-stream", **{"Last-Event-ID": last_id})
    with client.http.stream("GET", client.url, headers=headers) as stream:
        assert stream.status_code == 200
        for event in iter_sse(stream.iter_lines()):
            if event.data:
                message = json.loads(event.data)
                validate_outgoing(LEGACY, message, request_method="tools/call")
                resumed.append(message)
                if "result" in message:
                    break
    assert [m.get("params", {}).get("data") for m in resumed[:-1]] == ["After reconnect"]
    assert resumed[-1]["id"] == request["id"]
    assert resumed[-1]["result"]["content"][0]["text"] == "Reconnection test completed"
    # resuming an unknown stream, or another session's stream, replays nothing
    bogus = client.http.get(
        client.url,
        headers=session.headers(Accept="text/event-stream", **{"Last-Event-ID": "nope-7"}),
    )
    expect_error(bogus, 404, -32600, LEGACY)
    other = LegacySessionClient(client)
    foreign = client.http.get(
        client.url, headers=other.headers(Accept="text/event-stream", **{"Last-Event-ID": last_id})
    )
    assert foreign.status_code == 404
    client.assert_healthy()


def test_a_detached_stream_stays_resumable_past_many_json_answers(
    client: McpHttp, session: LegacySessionClient
) -> None:
    """Only responses that become streams keep an event log: answers sent as plain JSON
    (the usual case) must not push a live stream's log out of the session's bound."""
    assert session.request("logging/setLevel", {"level": "info"}).result == {}
    with session.stream("tools/call", {"name": "test_reconnection"}) as (request, events, msgs):
        for _message in msgs:
            pass
    last_id = [e.id for e in events if e.id][-1]
    for _ in range(MAX_STREAMS_PER_SESSION + 8):  # JSON answers, with SSE accepted
        reply = session.request("tools/call", {"name": "test_simple_text"})
        assert reply.response.headers["content-type"].startswith("application/json")
    headers = session.headers(Accept="text/event-stream", **{"Last-Event-ID": last_id})
    resumed: list[dict[str, Any]] = []
    with client.http.stream("GET", client.url, headers=headers) as stream:
        assert stream.status_code == 200
        for event in iter_sse(stream.iter_lines()):
            if event.data:
                resumed.append(json.loads(event.data))
                if "result" in resumed[-1]:
                    break
    assert resumed[-1]["id"] == request["id"]
    assert resumed[-1]["result"]["content"][0]["text"] == "Reconnection test completed"


def test_close_sse_stream_retry_hint_reaches_the_client(session: LegacySessionClient) -> None:
    assert session.request("logging/setLevel", {"level": "info"}).result == {}
    with session.stream("tools/call", {"name": "test_reconnection"}) as (_req, events, msgs):
        for _message in msgs:
            pass
    assert [e.retry for e in events if e.retry is not None][-1] == 100


# --------------------------------------------------------------------------- bounds (in-process)


def bounded_app(**options: Any) -> McpHttpApp:
    server = Server("bounded")

    @server.tool
    def hello() -> str:
        return "hi"

    return McpHttpApp(server, HttpOptions(**options))


def _initialize(http: McpHttp) -> Any:
    return http.post_json(
        initialize_request(1), {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
    )


def test_session_cap_gives_503_with_retry_after_and_idle_sessions_are_reaped() -> None:
    with ThreadServer(bounded_app(max_sessions=2, session_idle_s=0.6)) as running:
        http = McpHttp(running.url, running.alive)
        try:
            first = LegacySessionClient(http)
            LegacySessionClient(http)
            refused = _initialize(http)
            expect_error(refused, 503, -32603, LEGACY, request_id=1)
            assert refused.headers["retry-after"].isdigit()
            # existing sessions still work while new ones are refused
            assert first.request("ping").result == {}
            time.sleep(1.0)  # both sessions go idle past session_idle_s
            expired = http.post_json(legacy_request(3, "ping"), first.headers())
            expect_error(expired, 404, -32600, LEGACY, request_id=3)
            fresh = LegacySessionClient(http)  # slots were reclaimed
            assert fresh.request("tools/call", {"name": "hello"}).result["content"][0]["text"]
            http.assert_healthy()
        finally:
            http.close()


def test_legacy_off_answers_405_and_refuses_initialize() -> None:
    with ThreadServer(bounded_app(legacy=False)) as running:
        http = McpHttp(running.url, running.alive)
        try:
            response = _initialize(http)
            assert response.status_code == 400
            body = response.json()
            validate_outgoing(LEGACY, body)
            get = http.http.get(
                running.url, headers={"Mcp-Session-Id": "x", "Accept": "text/event-stream"}
            )
            assert get.status_code == 405 and get.headers["allow"] == "POST"
            http.assert_healthy()
        finally:
            http.close()


def test_legacy_messages_validate(session: LegacySessionClient) -> None:
    for method, params in [
        ("prompts/list", None),
        ("resources/templates/list", None),
        ("prompts/get", {"name": "test_simple_prompt"}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "p"},
            },
        ),
        ("resources/subscribe", {"uri": "test://watched-resource"}),
        ("resources/unsubscribe", {"uri": "test://watched-resource"}),
    ]:
        reply = session.request(method, params)
        check_messages(LEGACY, reply_messages(reply.response), request_method=method)
        assert "result" in reply.final, (method, reply.final)
