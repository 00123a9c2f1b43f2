"""The gateway's fast lane (mcpkit.compose.lane) against a real socket.

A small asyncio server on 127.0.0.1 records the exact bytes the lane sends and answers
what each test needs: JSON, a JSON-RPC error, a bare HTTP error, or an SSE stream with
progress and log notifications before the result.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from mcpkit.compose.lane import FastLane, ResultTooLarge
from mcpkit.compose.upstream import Upstream
from mcpkit.transports.client_base import (
    ConnectError,
    ConnectionClosedError,
    HttpStatusError,
    RequestTimeoutError,
    ServerError,
)
from mcpkit.transports.client_http import HttpTransport
from mcpkit.transports.http11 import Http11Pool
from support.flood import Flood
from support.servers import ThreadServer

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


class Recorder:
    def __init__(self, answer: Callable[[dict[str, Any]], bytes]) -> None:
        self.answer = answer
        self.heads: list[dict[str, str]] = []
        self.bodies: list[dict[str, Any]] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                fields = {"": lines[0]}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        fields[name.strip().lower()] = value.strip()
                body = json.loads(await reader.readexactly(int(fields["content-length"])))
                self.heads.append(fields)
                self.bodies.append(body)
                writer.write(self.answer(body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def upstream() -> AsyncIterator[Callable[..., Any]]:
    servers: list[asyncio.Server] = []

    async def start(answer: Callable[[dict[str, Any]], bytes]) -> tuple[Recorder, str]:
        recorder = Recorder(answer)
        server = await asyncio.start_server(recorder.serve, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return recorder, f"http://127.0.0.1:{port}/mcp?tenant=a"

    yield start
    for server in servers:
        server.close()


def http(status: str, content_type: str, body: bytes) -> bytes:
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )


def result_of(body: dict[str, Any], result: dict[str, Any]) -> bytes:
    payload = {"jsonrpc": "2.0", "id": body["id"], "result": result}
    return http("200 OK", "application/json", json.dumps(payload).encode())


def lane_to(url: str, headers: dict[str, str], **options: Any) -> FastLane:
    """A lane built as an upstream builds it: from a client transport with a pool."""
    return FastLane(HttpTransport(url, headers=headers, pool=Http11Pool()), **options)


# Only what the lane asks of a client: the session's per-request _meta.
CLIENT: Any = SimpleNamespace(
    session=SimpleNamespace(
        meta=lambda token=None: {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            **({"progressToken": token} if token else {}),
        }
    )
)


async def test_request_head_and_body(upstream: Any) -> None:
    recorder, url = await upstream(lambda body: result_of(body, {"content": []}))
    lane = lane_to(url, {"Authorization": "Bearer t"}, timeout=5)
    meta = {"traceparent": "00-aa-bb-01"}
    result = await lane.request(CLIENT, "tools/call", {"name": "échø", "arguments": {}}, meta)
    assert result == {"content": []}
    head, body = recorder.heads[0], recorder.bodies[0]
    assert head[""] == "POST /mcp?tenant=a HTTP/1.1"
    assert head["host"] == url.split("/")[2]
    assert head["authorization"] == "Bearer t"
    assert head["mcp-protocol-version"] == MODERN
    assert head["mcp-method"] == "tools/call"
    # a name that is not plain visible ASCII goes in the base64 sentinel form
    assert head["mcp-name"] == "=?base64?" + base64.b64encode("échø".encode()).decode() + "?="
    assert head["accept"] == "application/json, text/event-stream"
    assert body["method"] == "tools/call" and body["params"]["name"] == "échø"
    assert body["params"]["_meta"]["traceparent"] == "00-aa-bb-01"
    assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
    await lane.request(CLIENT, "tools/list", {}, {})
    assert "mcp-name" not in recorder.heads[1]
    assert recorder.bodies[1]["id"] != body["id"]


async def test_errors_are_the_clients_error_types(upstream: Any) -> None:
    def answer(body: dict[str, Any]) -> bytes:
        if body["params"].get("name") == "broken":
            return http("500 Internal Server Error", "text/plain", b"boom")
        error = {"code": -32602, "message": "Unknown tool: nope"}
        payload = json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error}).encode()
        return http("400 Bad Request", "application/json", payload)

    _, url = await upstream(answer)
    lane = lane_to(url, {}, timeout=5)
    with pytest.raises(ServerError) as info:
        await lane.request(CLIENT, "tools/call", {"name": "nope"}, {})
    assert info.value.code == -32602
    with pytest.raises(HttpStatusError) as status:
        await lane.request(CLIENT, "tools/call", {"name": "broken"}, {})
    assert status.value.status == 500


async def test_sse_answer_relays_progress_and_logs(upstream: Any) -> None:
    def answer(body: dict[str, Any]) -> bytes:
        token = body["params"]["_meta"]["progressToken"]
        events = [
            {"jsonrpc": "2.0", "method": "notifications/progress",
             "params": {"progressToken": token, "progress": 1, "total": 2}},
            {"jsonrpc": "2.0", "method": "notifications/progress",
             "params": {"progressToken": "someone-else", "progress": 9}},
            {"jsonrpc": "2.0", "method": "notifications/message",
             "params": {"level": "info", "data": "working"}},
            {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [], "ok": True}},
        ]  # fmt: skip
        stream = b"".join(b"event: message\r\ndata: " + json.dumps(e).encode() + b"\r\n\r\n"
                          for e in events)  # fmt: skip
        return http("200 OK", "text/event-stream", stream)

    _, url = await upstream(answer)
    logs: list[dict[str, Any]] = []
    progress: list[dict[str, Any]] = []

    async def no_requests(message: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError(f"a modern server sent a request: {message}")

    async def on_notification(message: dict[str, Any]) -> None:  # (the client's: on_log)
        if message["method"] == "notifications/message":
            logs.append(message["params"])

    async def on_progress(params: dict[str, Any]) -> None:
        progress.append(params)

    lane = lane_to(url, {}, timeout=5)
    lane.transport.set_handlers(no_requests, on_notification)
    result = await lane.request(CLIENT, "tools/call", {"name": "slow"}, {}, progress=on_progress)
    assert result == {"content": [], "ok": True}
    assert [p["progress"] for p in progress] == [1]
    assert logs == [{"level": "info", "data": "working"}]


async def test_an_answer_the_lane_cannot_use_is_the_clients_error(upstream: Any) -> None:
    """Read by the client's rules: an SSE answer that ends, or whose connection drops,
    before the result is a ConnectionClosedError naming the call; a JSON answer whose
    ``Content-Length`` passes the cap is refused unread; an upstream that is gone is a
    ConnectError naming its URL."""

    def answer(body: dict[str, Any]) -> bytes:
        name = body["params"]["name"]
        if name == "big":
            return http("200 OK", "application/json", b"[" + b"1," * 600 + b"1]")
        event = b"data: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}).encode()
        if name == "ends":
            return http("200 OK", "text/event-stream", event + b"\n\n")
        return (  # chunked, cut in the middle of a chunk
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n400\r\n" + event
        )

    recorder, url = await upstream(answer)
    lane = lane_to(url, {}, timeout=5)
    with pytest.raises(ConnectionClosedError, match="stream of tools/call before answering"):
        await lane.request(CLIENT, "tools/call", {"name": "ends"}, {})
    with pytest.raises(ResultTooLarge, match=r"too large \(more; at most 1000 bytes"):
        await lane.request(CLIENT, "tools/call", {"name": "big"}, {}, limit=1000)
    drop = asyncio.create_task(lane.request(CLIENT, "tools/call", {"name": "drops"}, {}))
    while len(recorder.bodies) < 3:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    for writer in recorder.writers:
        writer.close()
    with pytest.raises(ConnectionClosedError, match="tools/call"):
        await drop
    gone = lane_to("http://127.0.0.1:9/mcp", {}, timeout=5)
    with pytest.raises(ConnectError, match=r"cannot connect to http://127\.0\.0\.1:9/mcp"):
        await gone.request(CLIENT, "tools/list", {}, {})


def test_headers_that_cannot_be_sent_are_refused() -> None:
    """The client's transport refuses a header that cannot be sent (one rule, checked
    when it is made), so neither of its wires, the lane included, ever writes one; a
    transport without a pool (``https://``) has no lane."""
    for bad in ({"X-A": "a\r\nX-Evil: 1"}, {"Bad Name": "v"}, {"X": "☃"}, {"X": "é"}):
        with pytest.raises(ValueError, match="cannot be sent") as refusal:
            HttpTransport("http://127.0.0.1:1/mcp", headers=bad, pool=Http11Pool())
        assert repr(next(iter(bad))) in str(refusal.value)
    secure = HttpTransport("https://example.com/mcp", pool=Http11Pool())
    assert secure.pool is None
    with pytest.raises(ValueError, match="needs a pooled http:// transport"):
        FastLane(secure, timeout=1)


async def _paced(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """An upstream that never answers ``hang``, and answers ``paced`` as an SSE stream
    with a progress notification every 0.1 s for 0.6 s before its result."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.startswith(b"content-length")
        )
        body = json.loads(await reader.readexactly(length))
        if body["params"]["name"] == "hang":
            await asyncio.sleep(30)
            return
        token = body["params"]["_meta"]["progressToken"]
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
        )
        for step in range(6):
            await asyncio.sleep(0.1)
            note = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": step}}  # fmt: skip
            writer.write(b"data: " + json.dumps(note).encode() + b"\n\n")
        done = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}
        writer.write(b"data: " + json.dumps(done).encode() + b"\n\n")
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def test_the_upstream_deadline_and_progress_extending_it() -> None:
    """The lane's deadlines (one timer per pool, ``Http11Pool.request``): a call past
    its timeout raises RequestTimeoutError; progress keeps a longer call alive; a call
    cancelled by someone else is cancelled, not timed out."""
    server = await asyncio.start_server(_paced, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    lane = lane_to(f"http://127.0.0.1:{port}/mcp", {}, timeout=0.3)

    async def relay(params: dict[str, Any]) -> None:
        pass

    try:
        with pytest.raises(RequestTimeoutError):
            await lane.request(CLIENT, "tools/call", {"name": "hang"}, {})
        paced = lane.request(CLIENT, "tools/call", {"name": "paced"}, {}, progress=relay)
        assert await paced == {"content": []}  # 0.6 s, with progress every 0.1 s
        other = asyncio.create_task(lane.request(CLIENT, "tools/call", {"name": "hang"}, {}))
        await asyncio.sleep(0.05)
        other.cancel()
        with pytest.raises(asyncio.CancelledError):
            await other
        assert other.cancelled()
    finally:
        server.close()


async def test_an_endless_sse_answer_is_abandoned_at_the_limit() -> None:
    """The answer-size cap holds inside the lane's decoding: an SSE line that never ends
    is refused as soon as it passes the limit and the connection is closed, so the
    upstream stops sending long before it could flood the gateway."""
    limit = 1024 * 1024
    flood = Flood("sse", cap=32 * limit)
    with ThreadServer(flood, lifespan="off") as server:
        lane = lane_to(server.url, {}, timeout=60)
        try:
            with pytest.raises(ResultTooLarge):
                await lane.request(CLIENT, "tools/call", {"name": "flood"}, {}, limit=limit)
            assert await anyio.to_thread.run_sync(flood.ended.wait, 30)
        finally:
            lane.pool.close()
    assert flood.abandoned == 1
    assert flood.sent < 10 * limit, f"the upstream sent {flood.sent} bytes before the lane left"


def _relaying_client(log_level: str | None) -> Any:
    """A client whose session says who asks (``Session.identity``), at ``log_level``."""
    identity = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "gw", "version": "1"},
        **({"io.modelcontextprotocol/logLevel": log_level} if log_level else {}),
    }
    return SimpleNamespace(session=SimpleNamespace(identity=lambda: dict(identity)))


async def test_a_relayed_call_says_who_asks_with_the_front_clients_capabilities(
    upstream: Any,
) -> None:
    """``request_bare``: the front client's capabilities and log level, the gateway
    client's version and info (its session's identity); the client's log level only
    where the front asked for none."""
    recorder, url = await upstream(lambda body: result_of(body, {"content": []}))
    lane = lane_to(url, {}, timeout=5)
    caps: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    level = "io.modelcontextprotocol/logLevel"
    cases = [(None, {level: "debug"}), ("error", {level: "debug"}), ("error", {})]
    try:
        for own_level, front in cases:
            params = {"name": "echo", "arguments": {}}
            await lane.request_bare(
                _relaying_client(own_level), params, {**caps, **front}, None, 1000
            )
        metas = [body["params"]["_meta"] for body in recorder.bodies]
        for meta in metas:
            assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "gw", "version": "1"}
            assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
            assert meta["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": {}}
        assert [meta.get(level) for meta in metas] == ["debug", "debug", "error"]
    finally:
        lane.pool.close()


async def test_an_upstream_whose_headers_cannot_be_sent_says_so() -> None:
    """The client refuses the header once, when it is made; the upstream's connection
    attempt fails with those words (and is retried), its run goes on."""
    upstream = Upstream("bad", "http://127.0.0.1:9/mcp", headers={"Bad Name": "v"})
    async with anyio.create_task_group() as tg:
        await tg.start(upstream.run)
        assert upstream.client is None and upstream.lane is None
        assert upstream.error is not None
        assert "header name 'Bad Name' cannot be sent" in upstream.error
        await upstream.stop()
