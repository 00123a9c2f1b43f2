"""Plan section 5, group B (legacy 2025-11-25 sessions) plus C8/C9 on HTTP, and the rule
that sessions and handles are names, never authentication: they are bound to the
principal that created them.

The server is the fixture server behind ``launch_http.py --auth``: the principal is the
bearer token (``alice``, ``bob``), no token is a 401.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from relkit import (
    LEGACY,
    Reply,
    ServerProcess,
    call_tool,
    http_serving,
    next_id,
    post,
)

from support.mcp import modern_headers, sse_json
from support.waits import poll

if TYPE_CHECKING:
    from conftest import Rel

INVALID = -32600

ALICE = {"authorization": "Bearer alice"}
BOB = {"authorization": "Bearer bob"}


def legacy_headers(session: str | None = None, **extra: str) -> dict[str, str]:
    h = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LEGACY,
    }
    if session is not None:
        h["mcp-session-id"] = session
    h.update(extra)
    return h


def initialize(
    client: httpx.Client,
    url: str,
    who: dict[str, str],
    version: str = LEGACY,
    caps: dict[str, Any] | None = None,
) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": caps or {},
            "clientInfo": {"name": "rel", "version": "1"},
        },
    }
    return client.post(url, content=json.dumps(body), headers=legacy_headers(**who))


def open_session(client: httpx.Client, url: str, who: dict[str, str], **kw: Any) -> str:
    response = initialize(client, url, who, **kw)
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    sent = client.post(url, content=json.dumps(note), headers=legacy_headers(session, **who))
    assert sent.status_code == 202
    return session


def legacy_call(
    client: httpx.Client,
    url: str,
    session: str | None,
    message: dict[str, Any],
    who: dict[str, str],
    **extra: str,
) -> tuple[int, dict[str, Any] | None, httpx.Response]:
    response = client.post(
        url, content=json.dumps(message), headers=legacy_headers(session, **who, **extra)
    )
    body: dict[str, Any] | None = None
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for item in sse_json(response.text):
            if "id" in item and ("result" in item or "error" in item):
                body = item
    elif response.content:
        body = response.json()
    return response.status_code, body, response


@pytest.fixture(scope="module")
def auth_server(workdir: Path) -> Iterator[ServerProcess]:
    server = ServerProcess.launcher(workdir, "--auth")
    try:
        yield server
    finally:
        server.stop()


# ------------------------------ authentication


def test_no_token_is_401_and_nothing_runs(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    tag = uuid.uuid4().hex[:12]
    message = call_tool(next_id(), "slow", {"tag": tag, "seconds": 0})
    reply = post(client, auth_server.url, message)
    assert reply.status == 401 and reply.error["code"] == INVALID, reply.describe()
    assert reply.headers["www-authenticate"].startswith("Bearer")
    assert not auth_server.ran(tag)
    http_serving(rel, auth_server, client, ALICE)


# ------------------------------ B1


def test_b1_missing_or_unknown_session(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    open_session(client, auth_server.url, ALICE)
    tag = uuid.uuid4().hex[:12]
    message = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": tag, "seconds": 0}},
    }
    status, body, _ = legacy_call(client, auth_server.url, None, message, ALICE)
    assert (
        status == 400 and body is not None and body["error"]["code"] == INVALID and body["id"] == 5
    )
    status, body, _ = legacy_call(client, auth_server.url, "no-such-session", message, ALICE)
    assert status == 404 and body is not None and body["error"]["code"] == INVALID
    assert not auth_server.ran(tag)
    http_serving(rel, auth_server, client, ALICE)


# ------------------------------ B2 principal binding


def test_b2_session_of_another_principal_is_404(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    session = open_session(client, auth_server.url, ALICE)
    tag = uuid.uuid4().hex[:12]
    message = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": tag, "seconds": 0}},
    }
    status, body, _ = legacy_call(client, auth_server.url, session, message, BOB)
    assert status == 404 and body is not None and body["error"]["code"] == INVALID
    assert not auth_server.ran(tag)
    for method in ("GET", "DELETE"):
        response = client.request(
            method,
            auth_server.url,
            headers=legacy_headers(session, accept="text/event-stream", **BOB),
        )
        assert response.status_code == 404, (method, response.text)
    # ... and Alice's session is untouched by Bob's attempts
    ok = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"nonce": "mine"}},
    }
    status, body, _ = legacy_call(client, auth_server.url, session, ok, ALICE)
    assert status == 200 and body is not None and body["result"]["content"][0]["text"] == "mine"
    rel.verified(4)
    http_serving(rel, auth_server, client, ALICE)


def test_b2_foreign_session_answer_is_identical_to_unknown(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    session = open_session(client, auth_server.url, ALICE)
    message = {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}
    s1, foreign, _ = legacy_call(client, auth_server.url, session, message, BOB)
    s2, unknown, _ = legacy_call(client, auth_server.url, "x" + session[1:], message, BOB)
    assert (s1, foreign) == (s2, unknown)


def test_handles_are_bound_to_the_principal(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    mint = call_tool(next_id(), "mint")
    made = post(client, auth_server.url, mint, {**modern_headers(mint), **ALICE}).result
    handle = made["structuredContent"]["handle"]
    assert len(handle) >= 32
    peek = call_tool(next_id(), "peek", {"handle": handle})
    mine = post(client, auth_server.url, peek, {**modern_headers(peek), **ALICE}).result
    assert mine["structuredContent"] == {"data": {"secret": "s3"}}
    peek["id"] = next_id()
    theirs = post(client, auth_server.url, peek, {**modern_headers(peek), **BOB}).result
    # The refusal names the handle, whose random id may itself contain "s3": the secret
    # must not appear anywhere else in it.
    assert theirs["isError"] is True and "s3" not in json.dumps(theirs).replace(handle, "")
    assert "Unknown or expired handle" in theirs["content"][0]["text"]
    rel.verified(3)


def test_request_state_is_bound_to_tool_and_principal(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    first_call = call_tool(next_id(), "ask", capabilities=caps)
    first = post(
        client, auth_server.url, first_call, {**modern_headers(first_call), **ALICE}
    ).result
    assert first["resultType"] == "input_required"
    state = first["requestState"]
    answers = {"word": {"action": "accept", "content": {"word": "kiwi"}}}

    def retry(tool: str, token: Any, who: dict[str, str]) -> tuple[dict[str, Any], Reply]:
        message = call_tool(next_id(), tool, capabilities=caps)
        message["params"].update({"requestState": token, "inputResponses": answers})
        return message, post(client, auth_server.url, message, {**modern_headers(message), **who})

    flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
    for tool, token, who in (
        ("ask", flipped, ALICE),  # tampered
        ("ask", state[: len(state) // 2], ALICE),  # truncated
        ("ask", "v1.unknownkey.AAAA", ALICE),  # forged
        ("ask", {"s": 1}, ALICE),  # not a string
        ("ask_other", state, ALICE),  # replayed against another tool
        ("ask", state, BOB),  # replayed by another principal
    ):
        _, reply = retry(tool, token, who)
        assert reply.status == 400 and reply.error["code"] == -32602, (tool, who, reply.describe())
        assert "word=" not in reply.raw.decode(errors="replace")
    _, good = retry("ask", state, ALICE)
    assert good.result["content"][0]["text"] == "word=kiwi"
    rel.verified(7)


# ------------------------------ B3 session ids


def test_b3_session_ids_are_unique_unpredictable_and_visible_ascii(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    ids = [open_session(client, auth_server.url, ALICE) for _ in range(300)]
    assert len(set(ids)) == len(ids)
    for sid in ids:
        assert all(0x21 <= ord(ch) <= 0x7E for ch in sid), sid
        assert len(sid) >= 32  # token_urlsafe(24): 192 random bits
    # no shared prefix long enough to suggest a counter or a timestamp
    assert len({sid[:6] for sid in ids}) > 290
    rel.verified(len(ids))
    for sid in ids:  # tidy up
        client.delete(auth_server.url, headers=legacy_headers(sid, **ALICE))


@pytest.mark.parametrize(
    "value",
    [b"abc\x01def", b"x" * 10_000, b"\xff\xfe", b"../../etc/passwd"],
    ids=["control-char", "10KB", "non-ascii", "path"],
)
def test_b3_hostile_session_ids_are_refused_without_echo(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client, value: bytes
) -> None:
    message = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).encode()
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer alice\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        b"Mcp-Session-Id: " + value + b"\r\nContent-Length: %d\r\n\r\n" % len(message)
    )
    with socket.create_connection(("127.0.0.1", auth_server.port), 5) as sock:
        sock.sendall(head + message)
        sock.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < 20:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    assert status in (400, 404, 431), data[:300]  # 431: a value over the 8 KiB limit
    assert value not in data or len(value) < 4
    http_serving(rel, auth_server, client, ALICE)


# ------------------------------ B4 / B5 caps


def test_b4_session_cap_is_503_with_retry_after(
    rel: Rel, workdir: Path, client: httpx.Client
) -> None:
    server = ServerProcess.launcher(workdir, "--max-sessions", "3", "--idle", "600")
    try:
        for _ in range(3):
            open_session(client, server.url, {})
        response = initialize(client, server.url, {})
        assert response.status_code == 503, response.text
        assert int(response.headers["retry-after"]) > 0
        body = response.json()
        assert body["id"] == 1 and body["error"]["code"] == -32603
        serving_plain(rel, server, client)
    finally:
        server.stop()


def serving_plain(rel: Rel, server: ServerProcess, client: httpx.Client) -> None:
    assert rel.alive(server)
    nonce = uuid.uuid4().hex
    reply = post(client, server.url, call_tool(next_id(), "echo", {"nonce": nonce}))
    assert reply.status == 200 and reply.result["content"][0]["text"] == nonce
    rel.verified()


def test_b5_half_open_initialize_reserves_no_slot(
    rel: Rel, workdir: Path, client: httpx.Client
) -> None:
    server = ServerProcess.launcher(workdir, "--max-sessions", "2", "--idle", "600")
    sockets: list[socket.socket] = []
    try:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "rel", "version": "1"},
                },
            }
        ).encode()
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        for _ in range(50):
            sock = socket.create_connection(("127.0.0.1", server.port), 5)
            sock.sendall(head + body[: len(body) // 2])
            sockets.append(sock)
        time.sleep(0.3)
        for _ in range(2):
            open_session(client, server.url, {})
        count = call_tool(next_id(), "session_count")
        assert post(client, server.url, count).result["content"][0]["text"] == "2"
        serving_plain(rel, server, client)
    finally:
        for sock in sockets:
            sock.close()
        server.stop()


# ------------------------------ B6 lifecycle


def test_b6_delete_then_404_and_second_get_stream_409(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    session = open_session(client, auth_server.url, ALICE)
    with client.stream(
        "GET", auth_server.url, headers=legacy_headers(session, accept="text/event-stream", **ALICE)
    ) as stream:
        assert stream.status_code == 200
        second = client.get(
            auth_server.url, headers=legacy_headers(session, accept="text/event-stream", **ALICE)
        )
        assert second.status_code == 409 and second.json()["error"]["code"] == INVALID
    gone = client.delete(auth_server.url, headers=legacy_headers(session, **ALICE))
    assert gone.status_code == 200
    message = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    status, body, _ = legacy_call(client, auth_server.url, session, message, ALICE)
    assert status == 404 and body is not None and body["error"]["code"] == INVALID
    http_serving(rel, auth_server, client, ALICE)


def test_b6_foreign_last_event_id_replays_nothing(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    alice = open_session(client, auth_server.url, ALICE)
    bob = open_session(client, auth_server.url, BOB)
    message = {
        "jsonrpc": "2.0",
        "id": 10,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"nonce": "alice-secret"},
            "_meta": {"progressToken": "p"},
        },
    }
    response = client.post(
        auth_server.url, content=json.dumps(message), headers=legacy_headers(alice, **ALICE)
    )
    assert "alice-secret" in response.text
    # Event ids of Alice's stream (if it was SSE) or a guess in the documented format.
    event_id = next(
        (line[3:].strip() for line in response.text.splitlines() if line.startswith("id:")),
        f"s1-{alice[:6]}-1",
    )
    for last in (event_id, f"s1-{alice[:6]}-0", "s1-" + bob[:6] + "-0"):
        replay = client.get(
            auth_server.url,
            headers=legacy_headers(
                bob, accept="text/event-stream", **{"last-event-id": last}, **BOB
            ),
        )
        assert "alice-secret" not in replay.text, last
        assert replay.status_code in (200, 404)
    http_serving(rel, auth_server, client, ALICE)


# ------------------------------ C8 / C9 on HTTP sessions


def test_c8_duplicate_in_flight_id_on_a_session_is_409(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    session = open_session(client, auth_server.url, ALICE)
    tag = uuid.uuid4().hex[:12]
    slow = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": tag, "seconds": 1.0}},
    }
    import threading

    first: dict[str, Any] = {}

    def run_first() -> None:
        with httpx.Client(timeout=15) as other:
            first["reply"] = legacy_call(other, auth_server.url, session, slow, ALICE)

    thread = threading.Thread(target=run_first)
    thread.start()
    try:
        assert poll(lambda: f"start {tag}" in auth_server.records(), 5)
        dup = {
            "jsonrpc": "2.0",
            "id": 42,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"nonce": "dup"}},
        }
        status, body, _ = legacy_call(client, auth_server.url, session, dup, ALICE)
        assert body is not None and body["error"]["code"] == INVALID and body["id"] == 42
        assert status == 409
    finally:
        thread.join(10)
    status, body, _ = first["reply"]
    assert (
        status == 200 and body is not None and body["result"]["content"][0]["text"] == f"done {tag}"
    )


def test_c8_duplicate_in_flight_id_never_cross_wires(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    """Whatever the status, the duplicate never gets the first call's answer and vice versa."""
    session = open_session(client, auth_server.url, ALICE)
    tag = uuid.uuid4().hex[:12]
    slow = {
        "jsonrpc": "2.0",
        "id": 43,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": tag, "seconds": 0.6}},
    }
    import threading

    first: dict[str, Any] = {}

    def run_first() -> None:
        with httpx.Client(timeout=15) as other:
            first["reply"] = legacy_call(other, auth_server.url, session, slow, ALICE)

    thread = threading.Thread(target=run_first)
    thread.start()
    assert poll(lambda: f"start {tag}" in auth_server.records(), 5)
    dup = {
        "jsonrpc": "2.0",
        "id": 43,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"nonce": "dup"}},
    }
    _, body, _ = legacy_call(client, auth_server.url, session, dup, ALICE)
    thread.join(10)
    assert body is not None and body["id"] == 43 and body["error"]["code"] == INVALID
    _, first_body, _ = first["reply"]
    assert first_body is not None and first_body["result"]["content"][0]["text"] == f"done {tag}"
    rel.verified(2)


def test_c9_second_initialize_on_a_session_is_refused(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    session = open_session(client, auth_server.url, ALICE, version="2025-06-18")
    again = {
        "jsonrpc": "2.0",
        "id": 11,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "2"},
        },
    }
    status, body, _ = legacy_call(
        client, auth_server.url, session, again, ALICE, **{"mcp-protocol-version": "2025-06-18"}
    )
    assert body is not None and body["error"]["code"] == INVALID and body["id"] == 11
    # the negotiated version is unchanged: 2025-11-25 requests on this session carry a
    # header the session did not negotiate, 2025-06-18 ones keep working
    ping = {"jsonrpc": "2.0", "id": 12, "method": "ping"}
    status, body, _ = legacy_call(
        client, auth_server.url, session, ping, ALICE, **{"mcp-protocol-version": "2025-06-18"}
    )
    assert status == 200 and body == {"jsonrpc": "2.0", "id": 12, "result": {}}
    rel.verified(2)


def test_b6_last_event_id_with_a_non_ascii_digit(
    rel: Rel, auth_server: ServerProcess, client: httpx.Client
) -> None:
    session = open_session(client, auth_server.url, ALICE)
    listed = {"jsonrpc": "2.0", "id": 13, "method": "tools/list"}
    legacy_call(client, auth_server.url, session, listed, ALICE)  # creates stream s1
    request = (
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        b"Authorization: Bearer alice\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        b"Mcp-Session-Id: " + session.encode() + b"\r\n"
        b"Last-Event-ID: s1-" + session[:6].encode() + b"-\xb2\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", auth_server.port), 5) as sock:
        sock.sendall(request)
        sock.settimeout(5)
        data = sock.recv(65536)
    try:
        assert data.split(b" ", 2)[1] in (b"400", b"404"), data[:200]
    finally:
        http_serving(rel, auth_server, client, ALICE)
