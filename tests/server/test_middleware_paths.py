"""One request path: a middleware sees the same ordered events for the same ``tools/call``
whatever carries it: stdio (both eras), Streamable HTTP 2026-07-28, HTTP 2025-11-25, each
round of an MRTR exchange and a task-backed call.

The server is ``tests/servers/middleware_server.py`` run by ``mcpkit serve`` as a real
subprocess (real pipes, a real socket on 127.0.0.1); its middleware appends what it sees
to a file in the server's working directory, which the test reads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.httpclient import LegacySessionClient, McpHttp
from support.mcp import initialize_request, legacy_request, modern_headers, modern_request
from support.servers import SERVERS_DIR, ProcessServer, StdioProcess, http_subprocess

FIXTURE = SERVERS_DIR / "middleware_server.py"
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

#: What the middleware sees for ``echo {"text": "hi"}``: on_request, then on_call_tool,
#: then the tool, then the result travelling back out through both hooks.
EXPECTED = [
    ["on_request", "tools/call"],
    ["on_call_tool", "echo", "hi"],
    ["handler", "hi"],
    ["result", "echo: hi"],
    ["on_request done", "complete"],
]


def read_events(workdir: Path, after: int = 0) -> list[list[Any]]:
    path = workdir / "middleware-events.jsonl"
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[after:]]


def wait_events(workdir: Path, count: int, after: int = 0) -> list[list[Any]]:
    """The events after the first ``after``, once ``count`` of them were written (a task's
    events arrive after its CreateTaskResult)."""
    deadline = time.monotonic() + 15
    while True:
        events = read_events(workdir, after)
        if len(events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProcessServer, McpHttp]]:
    with http_subprocess(tmp_path_factory.mktemp("mw-http"), FIXTURE) as running:
        client = McpHttp(running.url, running.alive)
        yield running, client
        client.close()


def workdir_of(server: ProcessServer) -> Path:
    return server.output.parent


def test_stdio_modern_and_legacy(tmp_path: Path) -> None:
    proc = StdioProcess(FIXTURE, tmp_path)
    try:
        proc.send(modern_request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
        reply = proc.recv()
        assert reply["result"]["content"][0]["text"] == "echo: hi"
        assert read_events(tmp_path) == EXPECTED

        proc.send(initialize_request(2))
        assert "result" in proc.recv()
        proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.send(legacy_request(3, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
        reply = proc.recv()
        assert reply["id"] == 3 and reply["result"]["content"][0]["text"] == "echo: hi"
        assert read_events(tmp_path, len(EXPECTED)) == [
            ["on_notification", "notifications/initialized", "legacy"],
            *EXPECTED,
        ]
    finally:
        proc.stop()


def test_stdio_plain_def_tool_on_the_fast_path(tmp_path: Path) -> None:
    """A middleware around a plain ``def`` tool started on the stdio reader (its first
    step there, as every request's) sees every event, on both eras."""
    proc = StdioProcess(FIXTURE, tmp_path)
    try:
        for rid in range(1, 4):
            proc.send(
                modern_request(rid, "tools/call", {"name": "shout", "arguments": {"text": "hi"}})
            )
        replies = {proc.recv()["id"]: None for _ in range(3)}
        assert set(replies) == {1, 2, 3}
        shout = [["on_call_tool", "shout", "hi"] if e[0] == "on_call_tool" else e for e in EXPECTED]
        assert read_events(tmp_path) == shout * 3
    finally:
        proc.stop()


def test_http_modern(http: tuple[ProcessServer, McpHttp]) -> None:
    server, client = http
    before = len(read_events(workdir_of(server)))
    reply = client.modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert reply.result["content"][0]["text"] == "echo: hi"
    assert read_events(workdir_of(server), before) == EXPECTED


def test_http_legacy(http: tuple[ProcessServer, McpHttp]) -> None:
    server, client = http
    session = LegacySessionClient(client)
    before = len(read_events(workdir_of(server)))
    reply = session.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert reply.result["content"][0]["text"] == "echo: hi"
    assert read_events(workdir_of(server), before) == EXPECTED


def test_notifications_reach_on_notification(http: tuple[ProcessServer, McpHttp]) -> None:
    server, client = http
    before = len(read_events(workdir_of(server)))
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    response = client.post_json(note, modern_headers(note))
    assert response.status_code == 202
    assert read_events(workdir_of(server), before) == [
        ["on_notification", "notifications/cancelled", "modern"]
    ]


def test_mrtr_round_trip_runs_the_chain_each_round(http: tuple[ProcessServer, McpHttp]) -> None:
    server, client = http
    workdir = workdir_of(server)
    before = len(read_events(workdir))
    args = {"text": "hi", "confirm": True}
    caps: dict[str, Any] = {"elicitation": {"form": {}}}
    first = client.modern("tools/call", {"name": "echo", "arguments": args}, capabilities=caps)
    assert first.result["resultType"] == "input_required"
    (key,) = first.result["inputRequests"]
    round_one = read_events(workdir, before)
    assert round_one == [
        *EXPECTED[:3],
        ["result", "input_required"],
        ["on_request done", "input_required"],
    ]
    second = client.modern(
        "tools/call",
        {
            "name": "echo",
            "arguments": args,
            "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            "requestState": first.result["requestState"],
        },
        capabilities=caps,
    )
    assert second.result["content"][0]["text"] == "echo: hi"
    assert read_events(workdir, before + len(round_one)) == EXPECTED


def test_task_backed_call_runs_the_chain_inside_the_task(
    http: tuple[ProcessServer, McpHttp],
) -> None:
    server, client = http
    workdir = workdir_of(server)
    before = len(read_events(workdir))
    # Posted raw: a CreateTaskResult belongs to the tasks extension, not the core schema
    # the helper's modern() validates every result against.
    message = client.modern_request(
        "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, capabilities=TASKS
    )
    created = client.post_json(message, modern_headers(message)).json()["result"]
    assert created["resultType"] == "task"
    task_id = created["taskId"]
    deadline = time.monotonic() + 15
    while True:
        poll = client.modern_request("tasks/get", {"taskId": task_id}, capabilities=TASKS)
        answer = client.post_json(poll, modern_headers(poll, Mcp_Name=task_id))
        status = answer.json()["result"]
        if status["status"] == "completed" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert status["status"] == "completed", status
    assert status["result"]["content"][0]["text"] == "echo: hi"
    # The hook saw the tool's own result, not the CreateTaskResult, and tasks/get polls
    # are requests of their own (the fixture records only tools/call).
    assert wait_events(workdir, len(EXPECTED), before) == EXPECTED
