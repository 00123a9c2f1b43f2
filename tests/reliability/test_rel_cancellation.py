"""Plan section 5, group E (cancellation, timeouts, disconnects) and L11 (a cancellation
race storm), with real processes.  Cancellation is observed from outside: the ``slow``
tool writes ``start``/``cancel``/``cleanup``/``end`` lines to a record file.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
from relkit import (
    LEGACY,
    ServerProcess,
    StdioProcess,
    call_tool,
    http_serving,
    next_id,
    rel_server_argv,
    stdio_serving,
)

from mcpkit.client import Client, RequestTimeoutError
from support.mcp import modern_headers

if TYPE_CHECKING:
    from conftest import Rel


def record_time(proc: Any, line: str, timeout: float) -> float | None:
    """Monotonic time at which ``line`` showed up in the record file (polling)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if line in proc.records():
            return time.monotonic()
        time.sleep(0.005)
    return None


# ------------------------------ E1 / E2 stdio


def test_e1_cancelled_notification_cancels_the_handler_and_no_response(
    rel: Rel, stdio: StdioProcess
) -> None:
    tag = uuid.uuid4().hex[:12]
    rid = next_id()
    stdio.send(call_tool(rid, "slow", {"tag": tag, "seconds": 30}))
    assert record_time(stdio, f"start {tag}", 5)
    sent = time.monotonic()
    stdio.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "user"},
        }
    )
    cancelled = record_time(stdio, f"cancel {tag}", 5)
    assert cancelled is not None, stdio.records()
    assert cancelled - sent < 1.0, f"cancelled {cancelled - sent:.3f}s later (target 0.1s)"
    assert f"cleanup {tag}" in stdio.records() and f"end {tag}" not in stdio.records()
    assert stdio.quiet(0.5) == [], "a cancelled request was answered"
    stdio_serving(rel, stdio)


def test_e2_cancel_for_unknown_or_finished_requests_is_ignored(
    rel: Rel, stdio: StdioProcess
) -> None:
    rid = next_id()
    answer = stdio.request(call_tool(rid, "echo", {"nonce": "x"}))
    assert answer["id"] == rid
    for target in (rid, 987654, "nope", None, True, 1.5):
        stdio.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": target}}
        )
    assert stdio.quiet(0.4) == [], "a cancel produced a message"
    stdio_serving(rel, stdio)


def test_e2_initialize_cannot_be_cancelled(rel: Rel, stdio: StdioProcess) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": "init"},
    }
    stdio.send_raw(json.dumps(init).encode() + b"\n" + json.dumps(cancel).encode() + b"\n")
    first = stdio.recv(3)
    assert first["id"] == "init" and first["result"]["protocolVersion"] == LEGACY


# ------------------------------ E3 HTTP disconnects


def _open_stream(port: int, message: dict[str, Any], headers: dict[str, str]) -> socket.socket:
    body = json.dumps(message).encode()
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock = socket.create_connection(("127.0.0.1", port), 5)
    sock.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


@pytest.mark.parametrize("streaming", [True, False], ids=["mid-sse", "before-any-byte"])
def test_e3_modern_disconnect_cancels_the_handler(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, streaming: bool
) -> None:
    tag = uuid.uuid4().hex[:12]
    extra = {"progressToken": "p-" + tag} if streaming else {}
    message = call_tool(next_id(), "slow", {"tag": tag, "seconds": 30}, **extra)
    sock = _open_stream(http_cli.port, message, modern_headers(message))
    try:
        assert record_time(http_cli, f"start {tag}", 5)
        if streaming:
            sock.settimeout(5)
            data = b""
            while b"notifications/progress" not in data:
                data += sock.recv(4096)
            assert b"text/event-stream" in data
    finally:
        closed = time.monotonic()
        sock.close()
    cancelled = record_time(http_cli, f"cancel {tag}", 5)
    assert cancelled is not None and cancelled - closed < 1.0, http_cli.records()
    assert record_time(http_cli, f"cleanup {tag}", 2)
    assert f"end {tag}" not in http_cli.records()
    time.sleep(0.2)
    assert "Traceback" not in http_cli.log_text(), http_cli.log_text()[-2000:]
    http_serving(rel, http_cli, client)


def test_e3_legacy_disconnect_does_not_cancel(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    """2025-11-25: disconnecting is not cancellation; the handler runs to its end."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LEGACY,
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    session = client.post(http_cli.url, json=init, headers=headers).headers["mcp-session-id"]
    headers["mcp-session-id"] = session
    client.post(
        http_cli.url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers=headers,
    )
    tag = uuid.uuid4().hex[:12]
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": tag, "seconds": 0.8}},
    }
    sock = _open_stream(http_cli.port, message, headers)
    assert record_time(http_cli, f"start {tag}", 5)
    sock.close()
    assert record_time(http_cli, f"end {tag}", 5), http_cli.records()
    assert f"cancel {tag}" not in http_cli.records()
    assert "Traceback" not in http_cli.log_text()
    http_serving(rel, http_cli, client)


def test_e1_legacy_http_cancel_notification(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LEGACY,
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    session = client.post(http_cli.url, json=init, headers=headers).headers["mcp-session-id"]
    headers["mcp-session-id"] = session
    tag = uuid.uuid4().hex[:12]
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": tag, "seconds": 30}},
    }
    outcome: dict[str, Any] = {}

    def run() -> None:
        with httpx.Client(timeout=15) as other:
            outcome["response"] = other.post(http_cli.url, json=message, headers=headers)

    thread = threading.Thread(target=run)
    thread.start()
    assert record_time(http_cli, f"start {tag}", 5)
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    assert client.post(http_cli.url, json=note, headers=headers).status_code == 202
    assert record_time(http_cli, f"cancel {tag}", 2)
    thread.join(10)
    response = outcome["response"]
    assert '"result"' not in response.text and '"id":3' not in response.text.replace(" ", "")
    http_serving(rel, http_cli, client)


# ------------------------------ E5 client timeouts


@pytest.mark.anyio
async def test_e5_client_timeout_fires_and_cancels_on_stdio(rel: Rel, tmp_path: Path) -> None:
    record = tmp_path / "record.txt"
    record.touch()
    env = {"MCPKIT_SEALING_KEYS": "k", "MCPKIT_REL_RECORD": str(record)}
    async with Client(rel_server_argv(), cwd=tmp_path, env=env, max_timeout=1.0) as client:
        tag = uuid.uuid4().hex[:12]
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError) as info:
            await client.call_tool(
                "slow", {"tag": tag, "seconds": 30, "progress": False}, timeout=0.5
            )
        elapsed = time.monotonic() - started
        assert 0.45 <= elapsed < 1.5, elapsed
        assert not info.value.hard
        with anyio.fail_after(2):
            while f"cancel {tag}" not in record.read_text():
                await anyio.sleep(0.01)
        # hard maximum: progress keeps resetting the 0.3 s timeout, 1.0 s ends it
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError) as info:
            await client.call_tool(
                "progress_forever", {"interval": 0.05}, timeout=0.3, on_progress=lambda _: None
            )
        elapsed = time.monotonic() - started
        assert info.value.hard, str(info.value)
        assert 0.95 <= elapsed < 2.0, elapsed
        echo = await client.call_tool("echo", {"nonce": "alive"})
        assert echo["content"][0]["text"] == "alive"
    rel.verified()


@pytest.mark.anyio
async def test_e5_client_timeout_cancels_on_http(rel: Rel, http_cli: ServerProcess) -> None:
    async with Client(http_cli.url) as client:
        tag = uuid.uuid4().hex[:12]
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            await client.call_tool(
                "slow", {"tag": tag, "seconds": 30, "progress": False}, timeout=0.5
            )
        assert 0.45 <= time.monotonic() - started < 1.5
        with anyio.fail_after(2):
            while f"cancel {tag}" not in http_cli.records():
                await anyio.sleep(0.01)
        assert (await client.call_tool("echo", {"nonce": "ok"}))["content"][0]["text"] == "ok"
    rel.verified()


@pytest.mark.anyio
async def test_e6_server_progress_flood_reaches_the_client_and_the_call_completes(
    rel: Rel, tmp_path: Path
) -> None:
    seen = 0

    def count(_: dict[str, Any]) -> None:
        nonlocal seen
        seen += 1

    async with Client(rel_server_argv(), cwd=tmp_path, env={"MCPKIT_SEALING_KEYS": "k"}) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("progress_flood", {"count": 10_000}, on_progress=count)
        assert result["content"][0]["text"] == "flooded 10000"
        assert seen > 0
    rel.verified()


# ------------------------------ L11 storm


@pytest.mark.slow
def test_l11_cancellation_race_storm(rel: Rel, tmp_path: Path) -> None:
    """2,000 calls of 0-20 ms, 80 % of them cancelled 0-20 ms after being sent: every id
    gets at most one answer, carrying its own nonce; no un-cancelled call is lost."""
    count = 2000
    rng = random.Random(20261129)
    proc = StdioProcess(tmp_path)
    try:
        events: list[tuple[float, int, bytes]] = []
        plan: dict[int, dict[str, Any]] = {}
        for i in range(count):
            rid = 10_000 + i
            at = i * 0.0008
            nonce = uuid.UUID(int=rng.getrandbits(128)).hex
            seconds = rng.uniform(0, 0.02)
            cancel = rng.random() < 0.8
            plan[rid] = {"nonce": nonce, "cancel": cancel}
            events.append(
                (
                    at,
                    0,
                    json.dumps(
                        call_tool(rid, "nap_echo", {"nonce": nonce, "seconds": seconds})
                    ).encode()
                    + b"\n",
                )
            )
            if cancel:
                events.append(
                    (
                        at + rng.uniform(0, 0.02),
                        1,
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "method": "notifications/cancelled",
                                "params": {"requestId": rid},
                            }
                        ).encode()
                        + b"\n",
                    )
                )
        events.sort()
        started = time.monotonic()
        for at, _, data in events:
            delay = started + at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            proc.send_raw(data)
        answers: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for message in proc.quiet(0.3):
                answers[message.get("id")].append(message)
            if all(rid in answers for rid, p in plan.items() if not p["cancel"]):
                break
        duplicates = sum(len(v) - 1 for v in answers.values() if len(v) > 1)
        misrouted = sum(
            1
            for rid, msgs in answers.items()
            for m in msgs
            if rid not in plan
            or "result" not in m
            or m["result"]["content"][0]["text"] != plan[rid]["nonce"]
        )
        lost = sum(1 for rid, p in plan.items() if not p["cancel"] and rid not in answers)
        rel.misrouted(misrouted + duplicates)
        rel.lost(lost)
        rel.verified(sum(len(v) for v in answers.values()))
        assert (duplicates, misrouted, lost) == (0, 0, 0)
        stdio_serving(rel, proc)
    finally:
        proc.kill()
