"""Streamable HTTP on an in-process uvicorn (real sockets on 127.0.0.1) with a server whose
tools record what happens to them: disconnect = cancellation on 2026-07-28 but not on
2025-11-25, notifications/cancelled, lifespan entered once, a small body limit, concurrent
clients reusing the same JSON-RPC id, and listen streams at shutdown."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import Context, Server
from mcpkit.protocol.sealing import Keyring
from mcpkit.transports.http import HttpOptions, McpHttpApp
from support.httpclient import LegacySessionClient, McpHttp, expect_error
from support.mcp import iter_sse, legacy_request, modern_headers, modern_request
from support.schema import MODERN, validate_outgoing
from support.servers import ThreadServer, http_subprocess

WAIT = 10.0  # generous upper bound for "it happens", never a performance claim


class Recorder:
    """Shared state between the server thread's tools and the test."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.finished = threading.Event()
        self.lifespan_enters = 0
        self.lifespan_exits = 0


def make_app(recorder: Recorder, **options: Any) -> McpHttpApp:
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        recorder.lifespan_enters += 1
        yield
        recorder.lifespan_exits += 1

    server = Server("streams", lifespan=lifespan, keyring=Keyring.from_secrets(["streams"]))

    @server.tool
    async def slow(seconds: float, ctx: Context) -> str:
        recorder.started.set()
        try:
            await ctx.report_progress(1, 2, "started")
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            recorder.cancelled.set()
            raise
        recorder.finished.set()
        return "finished"

    @server.tool
    def echo(nonce: str) -> str:
        return nonce

    async def _waiting(seconds: float) -> str:
        recorder.started.set()
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            recorder.cancelled.set()
            raise
        recorder.finished.set()
        return "finished"

    @server.tool(inline=True)
    def slow_plain(seconds: float) -> Any:
        """A plain def (run inline, no per-request cancel scope) returning an awaitable."""
        return _waiting(seconds)

    kept: list[Context] = []

    @server.tool
    def keep_context(ctx: Context) -> str:
        """Answered as plain JSON; its Context is used again after that (report_late)."""
        kept.append(ctx)
        return "kept"

    @server.tool
    async def report_late() -> str:
        await kept[-1].report_progress(1, 1, "after the answer went out")
        return "reported"

    @server.tool
    def surrogate() -> str:
        return "bad \udcff name"  # e.g. a filename decoded with surrogateescape

    @server.tool
    def change_tools() -> str:
        server.notify_tools_changed()
        return "changed"

    return McpHttpApp(server, HttpOptions(**options))


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def server(recorder: Recorder) -> Iterator[ThreadServer]:
    with ThreadServer(make_app(recorder)) as server:
        yield server


def raw_post(port: int, message: dict[str, Any], headers: dict[str, str]) -> socket.socket:
    """Send a POST on a bare socket and leave it open (so the test decides when the client
    'disconnects')."""
    body = json.dumps(message).encode()
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
    return sock


# --------------------------------------------------------------------------- cancellation


def test_modern_disconnect_before_any_output_cancels_the_handler(
    server: ThreadServer, recorder: Recorder, client: McpHttp
) -> None:
    message = modern_request(1, "tools/call", {"name": "slow", "arguments": {"seconds": 30}})
    sock = raw_post(server.port, message, modern_headers(message))
    assert recorder.started.wait(WAIT)
    sock.close()
    assert recorder.cancelled.wait(WAIT), "closing the connection did not cancel the handler"
    assert not recorder.finished.is_set()
    client.assert_healthy()


def test_modern_disconnect_cancels_what_a_plain_tool_returned_to_await(
    server: ThreadServer, recorder: Recorder, client: McpHttp
) -> None:
    message = modern_request(1, "tools/call", {"name": "slow_plain", "arguments": {"seconds": 30}})
    sock = raw_post(server.port, message, modern_headers(message))
    assert recorder.started.wait(WAIT)
    sock.close()
    assert recorder.cancelled.wait(WAIT), "closing the connection did not cancel the handler"
    assert not recorder.finished.is_set()
    client.assert_healthy()


def test_modern_plain_tool_returning_an_awaitable_answers(
    recorder: Recorder, client: McpHttp
) -> None:
    reply = client.modern("tools/call", {"name": "slow_plain", "arguments": {"seconds": 0.01}})
    assert reply.status == 200
    assert reply.result["content"][0]["text"] == "finished", reply.result
    assert recorder.finished.is_set()


def test_progress_after_a_plain_json_answer_is_dropped(client: McpHttp) -> None:
    """A handler's Context can outlive its request (kept by the tool); what it sends once
    the JSON answer is out goes nowhere, and breaks neither that call nor the caller."""
    first = client.modern("tools/call", {"name": "keep_context"}, progressToken="late-1")
    assert first.response.headers["content-type"].startswith("application/json")
    assert first.result["content"][0]["text"] == "kept"
    second = client.modern("tools/call", {"name": "report_late"})
    assert second.result.get("isError") is not True, second.result
    assert second.result["content"][0]["text"] == "reported"
    client.assert_healthy()


def test_modern_disconnect_mid_sse_cancels_the_handler(
    server: ThreadServer, recorder: Recorder, client: McpHttp
) -> None:
    message = modern_request(
        2, "tools/call", {"name": "slow", "arguments": {"seconds": 30}}, progressToken="p"
    )
    with client.http.stream(
        "POST", server.url, content=json.dumps(message), headers=modern_headers(message)
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in iter_sse(response.iter_lines()):
            progress = json.loads(event.data)
            validate_outgoing(MODERN, progress)
            assert progress["method"] == "notifications/progress"
            break
    assert recorder.cancelled.wait(WAIT), "closing the SSE stream did not cancel the handler"
    client.assert_healthy()


def test_legacy_disconnect_is_not_cancellation(
    server: ThreadServer, recorder: Recorder, client: McpHttp
) -> None:
    session = LegacySessionClient(client)
    message = legacy_request(3, "tools/call", {"name": "slow", "arguments": {"seconds": 0.3}})
    sock = raw_post(server.port, message, session.headers())
    assert recorder.started.wait(WAIT)
    sock.close()
    assert recorder.finished.wait(WAIT), "a 2025-11-25 request must survive a disconnect"
    assert not recorder.cancelled.is_set()
    assert session.request("ping").result == {}


def test_legacy_notifications_cancelled_mid_stream_sends_no_response(
    server: ThreadServer, recorder: Recorder, client: McpHttp
) -> None:
    session = LegacySessionClient(client)
    message = legacy_request(
        "to-cancel",
        "tools/call",
        {"name": "slow", "arguments": {"seconds": 30}, "_meta": {"progressToken": "p"}},
    )
    with client.http.stream(
        "POST", server.url, content=json.dumps(message), headers=session.headers()
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert recorder.started.wait(WAIT)
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "to-cancel", "reason": "user"},
        }
        assert client.post_json(note, session.headers()).status_code == 202
        assert recorder.cancelled.wait(WAIT)
        leftovers = [json.loads(e.data) for e in iter_sse(response.iter_lines()) if e.data]
    for leftover in leftovers:
        validate_outgoing("2025-11-25", leftover)
    assert all("result" not in m and "error" not in m for m in leftovers), leftovers
    assert session.request("ping").result == {}


def _read_http_response(sock: socket.socket) -> bytes:
    sock.settimeout(WAIT)
    data = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.mark.parametrize("tool", ["slow", "slow_plain"])  # slow_plain: no cancel scope
def test_legacy_notifications_cancelled_before_output_is_not_a_500(
    server: ThreadServer, recorder: Recorder, client: McpHttp, tool: str
) -> None:
    session = LegacySessionClient(client)
    message = legacy_request(
        "to-cancel", "tools/call", {"name": tool, "arguments": {"seconds": 30}}
    )
    sock = raw_post(server.port, message, {**session.headers(), "Connection": "close"})
    try:
        assert recorder.started.wait(WAIT)
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "to-cancel"},
        }
        assert client.post_json(note, session.headers()).status_code == 202
        assert recorder.cancelled.wait(WAIT)
        data = _read_http_response(sock)
    finally:
        sock.close()
    status_line = data.split(b"\r\n", 1)[0]
    assert b" 5" not in status_line, data[:300]
    assert b'"to-cancel"' not in data  # and no JSON-RPC response for the cancelled id


def test_legacy_inline_tool_returning_an_awaitable_is_answered(
    server: ThreadServer, recorder: Recorder, client: McpHttp
) -> None:
    session = LegacySessionClient(client)
    reply = session.request("tools/call", {"name": "slow_plain", "arguments": {"seconds": 0.01}})
    assert reply.result["content"][0]["text"] == "finished"
    assert recorder.finished.is_set() and not recorder.cancelled.is_set()


# --------------------------------------------------------------------------- lifespan


def test_lifespan_is_entered_once_across_many_requests(recorder: Recorder) -> None:
    server = ThreadServer(make_app(recorder))
    with server:
        http = McpHttp(server.url, server.alive)
        try:
            for _ in range(5):
                http.assert_healthy()
            LegacySessionClient(http).request(
                "tools/call", {"name": "echo", "arguments": {"nonce": "n"}}
            )
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda _: http.modern("tools/list").status, range(16)))
            assert (recorder.lifespan_enters, recorder.lifespan_exits) == (1, 0)
        finally:
            http.close()
    assert (recorder.lifespan_enters, recorder.lifespan_exits) == (1, 1)


def test_lifespan_is_entered_once_without_asgi_lifespan_events(recorder: Recorder) -> None:
    with ThreadServer(make_app(recorder), lifespan="off") as server:
        http = McpHttp(server.url, server.alive)
        try:
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda _: http.modern("tools/list").status, range(16)))
            assert recorder.lifespan_enters == 1
        finally:
            http.close()


# --------------------------------------------------------------------------- limits


def test_small_body_limit(recorder: Recorder) -> None:
    with ThreadServer(make_app(recorder, max_body_bytes=1024)) as server:
        http = McpHttp(server.url, server.alive)
        try:
            message = modern_request(
                1, "tools/call", {"name": "echo", "arguments": {"nonce": "x" * 2000}}
            )
            expect_error(http.post_json(message, modern_headers(message)), 413, -32600)
            chunks = (b"x" * 100 for _ in range(20))  # no Content-Length: counted while read
            response = http.http.post(server.url, content=chunks, headers=modern_headers(message))
            expect_error(response, 413, -32600)
            reply = http.modern("tools/call", {"name": "echo", "arguments": {"nonce": "ok"}})
            assert reply.result["content"][0]["text"] == "ok"
        finally:
            http.close()


def test_unencodable_result_is_a_json_rpc_error(client: McpHttp) -> None:
    message = modern_request(1, "tools/call", {"name": "surrogate"})
    response = client.post_json(message, modern_headers(message))
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    validate_outgoing(MODERN, body, request_method="tools/call")
    client.assert_healthy()


# --------------------------------------------------------------------------- concurrency


def test_concurrent_clients_reusing_id_1_get_their_own_answers(client: McpHttp) -> None:
    def one(nonce: str) -> str:
        message = modern_request(1, "tools/call", {"name": "echo", "arguments": {"nonce": nonce}})
        response = client.http.post(
            client.url, content=json.dumps(message), headers=modern_headers(message)
        )
        body = response.json()
        validate_outgoing(MODERN, body, request_method="tools/call")
        assert body["id"] == 1
        text: str = body["result"]["content"][0]["text"]
        return text

    nonces = [f"nonce-{i}" for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, nonces)) == nonces


# --------------------------------------------------------------------------- listen


def test_listen_sees_changes_made_through_other_requests(client: McpHttp) -> None:
    params = {"notifications": {"toolsListChanged": True}}
    with client.modern_stream(
        "subscriptions/listen",
        params,
    ) as (request, response, messages):
        ack = next(messages)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        other = McpHttp(client.url)
        try:
            other.modern("tools/call", {"name": "change_tools"})
        finally:
            other.close()
        note = next(messages)
        assert note["method"] == "notifications/tools/list_changed"
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == request["id"]
        response.close()
    client.assert_healthy()


def test_listen_without_sse_accept_is_refused(client: McpHttp) -> None:
    message = modern_request(4, "subscriptions/listen", {"notifications": {}})
    response = client.post_json(message, modern_headers(message, Accept="application/json"))
    assert response.status_code in (400, 406)
    body = response.json()
    validate_outgoing(MODERN, body)
    assert body["id"] == 4
    client.assert_healthy()


def test_sigterm_drains_and_exits_with_status_0(tmp_path: Path) -> None:
    # uvicorn's own signal handling raises the signal again after the drain (status -15).
    with http_subprocess(tmp_path) as server:
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=WAIT) == 0, server.output_tail()


def test_listen_stream_ends_with_a_result_on_graceful_shutdown(recorder: Recorder) -> None:
    server = ThreadServer(make_app(recorder), timeout_graceful_shutdown=1).start()
    http = McpHttp(server.url, server.alive)
    messages: list[dict[str, Any]] = []
    try:
        with http.modern_stream(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        ) as (req, _, it):
            messages.append(next(it))
            stopper = threading.Thread(target=server.stop)
            stopper.start()
            messages.extend(it)
            stopper.join(WAIT)
    finally:
        http.close()
        server.stop()
    final = messages[-1]
    assert final.get("id") == req["id"], messages
    assert final["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == req["id"]
