"""Middleware that waits around a plain ``def`` tool registered ``inline=True``: the
request runner starts the call in the task that finishes it (stdio: the reader, which
hands reading on if the call waits; HTTP 2026-07-28: uvicorn's request task, cancelled
natively when the client goes away), so it must run all in one task and one context, and
still be cancellable while the middleware waits.

The server is ``servers/waiting_middleware.py`` under ``mcpkit serve`` in a real
subprocess (real pipes; a real socket on 127.0.0.1), and in memory (``Client(server)``,
the stdio code path over the plain endpoint).  Its middleware resets a context variable
with its token and releases an anyio lock after waiting, both of which fail in another
context or task, can wait inside ``asyncio.timeout`` (which cancels the task it was
entered in), and reports whether the task changed.
"""

from __future__ import annotations

import importlib.util
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from mcpkit.client import Client
from support.httpclient import LegacySessionClient, McpHttp
from support.mcp import initialize_request, legacy_request, modern_headers, modern_request
from support.servers import ProcessServer, StdioProcess, http_subprocess

FIXTURE = Path(__file__).parent / "servers" / "waiting_middleware.py"


def probe(text: str, **extra: object) -> dict[str, object]:
    return {"name": "probe", "arguments": {"text": text, **extra}}


def expected(text: str) -> str:
    return f"{text} var={text} same_task=True leaked=None"


def wait_for_line(workdir: Path, line: str) -> None:
    deadline = time.monotonic() + 15
    path = workdir / "waiting-events.txt"
    while time.monotonic() < deadline:
        if path.exists() and line in path.read_text(encoding="utf-8").splitlines():
            return
        time.sleep(0.02)
    pytest.fail(f"the server never wrote {line!r}")


def test_stdio_pipelined_calls_stay_in_one_task_and_context(tmp_path: Path) -> None:
    proc = StdioProcess(FIXTURE, tmp_path)
    try:
        for rid in range(1, 9):  # all written before any answer: they overlap
            proc.send(modern_request(rid, "tools/call", probe(f"m{rid}")))
        texts = {}
        for _ in range(8):
            reply = proc.recv()
            texts[reply["id"]] = reply["result"]["content"][0]["text"]
        assert texts == {rid: expected(f"m{rid}") for rid in range(1, 9)}

        proc.send(initialize_request(100))
        assert "result" in proc.recv()
        proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for rid in range(101, 105):
            proc.send(legacy_request(rid, "tools/call", probe(f"l{rid}")))
        legacy = {}
        for _ in range(4):
            reply = proc.recv()
            legacy[reply["id"]] = reply["result"]["content"][0]["text"]
        assert legacy == {rid: expected(f"l{rid}") for rid in range(101, 105)}
    finally:
        proc.stop()


def test_stdio_cancel_reaches_a_waiting_middleware(tmp_path: Path) -> None:
    proc = StdioProcess(FIXTURE, tmp_path)
    try:
        proc.send(modern_request(1, "tools/call", probe("held", hold=True)))
        wait_for_line(tmp_path, "holding held")
        proc.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 1, "_meta": modern_request(0, "x")["params"]["_meta"]},
            }
        )
        wait_for_line(tmp_path, "cancelled held")
        # The lock the cancelled call held was released in its own task: the next call
        # takes it, and the cancelled request gets no answer.
        proc.send(modern_request(2, "tools/call", probe("after")))
        reply = proc.recv()
        assert reply["id"] == 2
        assert reply["result"]["content"][0]["text"] == expected("after")
        # The task the cancelled call ran in (on 3.11 the reader that read it, which
        # then waits for the end of input) is not left marked as cancelled: a timeout
        # entered in it still fires, and the server still ends cleanly at EOF.
        proc.send(modern_request(3, "tools/call", probe("timed", timeout=True)))
        assert proc.recv()["result"]["content"][0]["text"] == expected("timed") + " timed_out=True"
        proc.close_stdin()
        assert proc.process.wait(timeout=20) == 0, proc.stderr_tail()
        assert "Traceback" not in proc.stderr_tail(200)
    finally:
        proc.stop()


def test_stdio_asyncio_timeout_entered_before_the_first_wait_expires_in_its_request(
    tmp_path: Path,
) -> None:
    # asyncio.timeout cancels the task it was entered in: had the first step run on one
    # task and the rest on another, it would cancel the wrong one (the reader).
    proc = StdioProcess(FIXTURE, tmp_path)
    try:
        for rid in range(1, 5):  # overlapping, interleaved with calls that do not time out
            proc.send(modern_request(rid, "tools/call", probe(f"t{rid}", timeout=True)))
            proc.send(modern_request(rid + 10, "tools/call", probe(f"p{rid}")))
        texts = {}
        for _ in range(8):
            reply = proc.recv()
            texts[reply["id"]] = reply["result"]["content"][0]["text"]
        assert texts == {
            **{rid: expected(f"t{rid}") + " timed_out=True" for rid in range(1, 5)},
            **{rid + 10: expected(f"p{rid}") for rid in range(1, 5)},
        }
        proc.send(modern_request(20, "tools/call", probe("after")))
        assert proc.recv()["result"]["content"][0]["text"] == expected("after")
    finally:
        proc.stop()


def test_stdio_reading_goes_on_while_a_call_waits_and_eof_ends_it(tmp_path: Path) -> None:
    proc = StdioProcess(FIXTURE, tmp_path)
    try:
        proc.send(modern_request(1, "tools/call", probe("held", hold=True)))
        wait_for_line(tmp_path, "holding held")
        # The held call keeps the task that read it (and the middleware's lock, so these
        # are not tool calls); the next lines are still read and answered.
        for rid in (2, 3):
            proc.send(modern_request(rid, "tools/list", {}))
        replies = [proc.recv(), proc.recv()]
        assert sorted(r["id"] for r in replies) == [2, 3]
        assert all(r["result"]["tools"][0]["name"] == "probe" for r in replies)
        # End of input: the held call is cancelled (in its own task) and the server exits.
        proc.close_stdin()
        assert proc.process.wait(timeout=20) == 0, proc.stderr_tail()
        wait_for_line(tmp_path, "cancelled held")
        assert "Traceback" not in proc.stderr_tail(200)
    finally:
        proc.stop()


def load_fixture_server() -> Any:
    spec = importlib.util.spec_from_file_location("waiting_middleware_memory", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the fixture's middleware is asyncio's
async def test_in_memory_overlapping_calls_stay_in_one_task_and_context(
    anyio_backend: str,
) -> None:
    server = load_fixture_server()
    texts: dict[int, str] = {}
    async with Client(server) as client:

        async def one(i: int) -> None:
            result = await client.call_tool("probe", {"text": f"c{i}", "timeout": i % 2 == 0})
            texts[i] = str(result["content"][0]["text"])

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(one, i)
        again = await client.call_tool("probe", {"text": "last"})
    assert texts == {
        i: expected(f"c{i}") + (" timed_out=True" if i % 2 == 0 else "") for i in range(10)
    }
    assert again["content"][0]["text"] == expected("last")


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProcessServer, McpHttp]]:
    with http_subprocess(tmp_path_factory.mktemp("waits-http"), FIXTURE) as running:
        client = McpHttp(running.url, running.alive)
        yield running, client
        client.close()


def test_http_modern_concurrent_calls_stay_in_one_task_and_context(
    http: tuple[ProcessServer, McpHttp],
) -> None:
    _, client = http

    def call(i: int) -> str:
        reply = client.modern("tools/call", probe(f"h{i}"))
        return str(reply.result["content"][0]["text"])

    with ThreadPoolExecutor(4) as pool:
        texts = list(pool.map(call, range(12)))
    assert texts == [expected(f"h{i}") for i in range(12)]


def test_http_modern_disconnect_cancels_a_waiting_middleware(
    http: tuple[ProcessServer, McpHttp],
) -> None:
    server, client = http
    message = modern_request(7, "tools/call", probe("gone", hold=True))
    body = orjson.dumps(message)
    headers = modern_headers(message)
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{server.port}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    raw = ("\r\n".join(head) + "\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(raw)
        wait_for_line(server.output.parent, "holding gone")
    # The client went away while the middleware waited outside any block of the tool's:
    # the request's task is cancelled, its scope and lock unwound in that task.
    wait_for_line(server.output.parent, "cancelled gone")
    reply = client.modern("tools/call", probe("next"))
    assert reply.result["content"][0]["text"] == expected("next")


def test_http_legacy_calls_and_cancel_reach_a_waiting_middleware(
    http: tuple[ProcessServer, McpHttp],
) -> None:
    server, client = http
    session = LegacySessionClient(client)
    for i in range(3):
        reply = session.request("tools/call", probe(f"s{i}"))
        assert reply.result["content"][0]["text"] == expected(f"s{i}")

    held = legacy_request(9001, "tools/call", probe("held2", hold=True))
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(client.http.post, client.url, json=held, headers=session.headers())
        wait_for_line(server.output.parent, "holding held2")
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 9001},
        }
        assert client.http.post(client.url, json=note, headers=session.headers()).status_code == 202
        wait_for_line(server.output.parent, "cancelled held2")
        answered = pending.result(timeout=15)
    # A cancelled legacy request gets no JSON-RPC response (its stream just ends).
    assert b'"id":9001' not in answered.content.replace(b" ", b"")
    reply = session.request("tools/call", probe("after2"))
    assert reply.result["content"][0]["text"] == expected("after2")
