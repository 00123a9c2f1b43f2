"""stdio transport: ``python -m mcpkit serve TARGET`` as a subprocess with real pipes.

Both eras through the same pipes (2026-07-28 statelessly, 2025-11-25 after initialize),
server->client requests answered by the test, bad input on the pipe, stdin EOF, and tools
that write to stdout.  Every line on stdout must be exactly one JSON-RPC message, and every
message is validated against the official schema of its revision.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.mcp import initialize_request, legacy_request, modern_request
from support.schema import LEGACY, MODERN, validate_outgoing
from support.servers import (
    CONFORMANCE_SERVER,
    REPO_ROOT,
    SERVERS_DIR,
    StdioProcess,
    subprocess_env,
)

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


@pytest.fixture(scope="module")
def modern(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioProcess]:
    """One fixture-server process for the stateless tests (they do not interfere)."""
    proc = StdioProcess(CONFORMANCE_SERVER, tmp_path_factory.mktemp("stdio-modern"))
    yield proc
    proc.stop()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[StdioProcess]:
    """A process of its own (legacy sessions are per process)."""
    proc = StdioProcess(CONFORMANCE_SERVER, tmp_path)
    yield proc
    proc.stop()


def exchange(
    proc: StdioProcess,
    message: dict[str, Any],
    revision: str = MODERN,
    *,
    answer: Any = None,
    timeout: float = 10.0,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Send a request; return (its response, everything else received before it).

    Server->client requests are answered with ``answer(request) -> response message``.
    Every message received is schema-checked.
    """
    proc.send(message)
    others: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        received = proc.recv(timeout=max(0.1, deadline - time.monotonic()))
        if "method" in received:
            validate_outgoing(revision, received)
            others.append(received)
            if "id" in received:
                assert answer is not None, f"unexpected server request {received}"
                proc.send(answer(received))
            continue
        validate_outgoing(revision, received, request_method=message["method"])
        if received.get("id") == message["id"]:
            return received, others
        others.append(received)


def assert_serving(proc: StdioProcess) -> None:
    assert proc.process.poll() is None, proc.stderr_tail()
    response, _ = exchange(proc, modern_request("health", "tools/list"))
    assert isinstance(response["result"]["tools"], list)


# --------------------------------------------------------------------------- modern era


def test_discover_and_list(modern: StdioProcess) -> None:
    response, others = exchange(modern, modern_request(1, "server/discover"))
    assert others == []
    result = response["result"]
    assert result["supportedVersions"][0] == "2026-07-28"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
    tools, _ = exchange(modern, modern_request("two", "tools/list"))
    assert tools["id"] == "two"
    assert "test_simple_text" in [t["name"] for t in tools["result"]["tools"]]


def test_progress_notifications_then_result(modern: StdioProcess) -> None:
    message = modern_request(
        3, "tools/call", {"name": "test_tool_with_progress"}, progressToken="stdio-progress"
    )
    response, others = exchange(modern, message)
    assert [n["method"] for n in others] == ["notifications/progress"] * 3
    assert [n["params"]["progress"] for n in others] == [0, 50, 100]
    assert all(n["params"]["progressToken"] == "stdio-progress" for n in others)
    assert response["result"]["content"][0]["text"] == "Progress tool completed"


def test_logging_only_when_asked(modern: StdioProcess) -> None:
    level: dict[str, Any] = {"io.modelcontextprotocol/logLevel": "debug"}
    message = modern_request(4, "tools/call", {"name": "test_logging_tool"}, **level)
    _, others = exchange(modern, message)
    assert [n["method"] for n in others] == ["notifications/message"]
    _, quiet = exchange(modern, modern_request(5, "tools/call", {"name": "test_logging_tool"}))
    assert quiet == []


def test_input_required_round_trip(modern: StdioProcess) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    params = {"name": "test_input_required_result_multi_round"}
    first, _ = exchange(modern, modern_request(6, "tools/call", params, capabilities=caps))
    assert first["result"]["resultType"] == "input_required"
    assert list(first["result"]["inputRequests"]) == ["step1"]
    second, _ = exchange(
        modern,
        modern_request(
            7,
            "tools/call",
            {
                **params,
                "requestState": first["result"]["requestState"],
                "inputResponses": {"step1": {"action": "accept", "content": {"name": "Ada"}}},
            },
            capabilities=caps,
        ),
    )
    assert list(second["result"]["inputRequests"]) == ["step2"]
    done, _ = exchange(
        modern,
        modern_request(
            8,
            "tools/call",
            {
                **params,
                "requestState": second["result"]["requestState"],
                "inputResponses": {"step2": {"action": "accept", "content": {"color": "green"}}},
            },
            capabilities=caps,
        ),
    )
    assert done["result"]["content"][0]["text"] == "Ada likes green."
    tampered, _ = exchange(
        modern,
        modern_request(
            9,
            "tools/call",
            {
                **params,
                "requestState": "v1.0000.AAAA",
                "inputResponses": {"step2": {"action": "accept", "content": {"color": "red"}}},
            },
            capabilities=caps,
        ),
    )
    assert tampered["error"]["code"] == -32602


def test_listen_ack_notifications_and_cancel(modern: StdioProcess) -> None:
    listen = modern_request(
        "listen-1", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    modern.send(listen)
    ack = modern.recv()
    validate_outgoing(MODERN, ack)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"][SUBSCRIPTION_ID] == "listen-1"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    response, others = exchange(
        modern, modern_request(10, "tools/call", {"name": "test_trigger_tool_change"})
    )
    assert "result" in response
    while not modern.no_output(0.3):  # notifications may also follow the call's response
        others.append(modern.recv())
    assert others, "no list_changed after the tool list changed"
    for note in others:  # (adding and removing the dynamic tool may give two)
        validate_outgoing(MODERN, note)
        assert note["method"] == "notifications/tools/list_changed"
        assert note["params"]["_meta"][SUBSCRIPTION_ID] == "listen-1"
    # the client ends the subscription; no answer, no more notifications
    modern.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen-1"}}
    )
    response, others = exchange(
        modern, modern_request(11, "tools/call", {"name": "test_trigger_tool_change"})
    )
    assert others == [] and "result" in response
    assert modern.no_output(0.3), modern.lines.queue


def test_cancelled_request_gets_no_response(modern: StdioProcess) -> None:
    modern.send(
        modern_request(
            "slow-1", "tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}}
        )
    )
    modern.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "slow-1", "reason": "test"},
        }
    )
    response, others = exchange(modern, modern_request(12, "tools/list"))
    assert others == [] and "result" in response
    assert modern.no_output(0.3)


def test_duplicate_in_flight_id_is_refused_and_the_first_completes(modern: StdioProcess) -> None:
    slow = modern_request(
        "dup", "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.5}}
    )
    modern.send(slow)
    modern.send(slow)
    first = modern.recv()
    validate_outgoing(MODERN, first)
    assert first["id"] == "dup" and first["error"]["code"] == -32600
    second = modern.recv()
    validate_outgoing(MODERN, second, request_method="tools/call")
    assert second["id"] == "dup" and "result" in second


@pytest.mark.parametrize(
    ("version", "caps", "code"),
    [("2099-01-01", {}, -32022), ("1900-01-01", {}, -32022), ("2026-07-28", None, -32602)],
)
def test_meta_errors(modern: StdioProcess, version: str, caps: Any, code: int) -> None:
    message = modern_request(13, "tools/list", version=version)
    if caps is None:
        del message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    response, _ = exchange(modern, message)
    assert response["error"]["code"] == code
    if code == -32022:
        assert response["error"]["data"] == {"supported": ["2026-07-28"], "requested": version}


# --------------------------------------------------------------------------- bad input on the pipe


@pytest.mark.parametrize(
    "line",
    [b"{not json", b"\xff\xfe\xfd", b"NaN", b'{"a":1}{"b":2}', b"[" * 5000 + b"]" * 5000],
    ids=["garbage", "not-utf8", "nan", "two-objects", "nesting"],
)
def test_invalid_json_line_is_parse_error_without_id(modern: StdioProcess, line: bytes) -> None:
    modern.send_raw(line + b"\n")
    error = modern.recv()
    validate_outgoing(MODERN, error)
    assert error["error"]["code"] == -32700 and "id" not in error
    assert_serving(modern)


@pytest.mark.parametrize(
    ("body", "expected_id"),
    [
        ([], None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None),
        ({"jsonrpc": "1.0", "id": 14, "method": "ping"}, 14),
        ({"jsonrpc": "2.0"}, None),
        ({"jsonrpc": "2.0", "id": 15, "method": "x", "params": "bar"}, 15),
        ("ping", None),
    ],
)
def test_not_a_request_is_invalid_request(
    modern: StdioProcess, body: Any, expected_id: Any
) -> None:
    modern.send_raw(json.dumps(body).encode() + b"\n")
    error = modern.recv()
    validate_outgoing(MODERN, error)
    assert error["error"]["code"] == -32600
    assert error.get("id") == expected_id
    assert_serving(modern)


def test_unknown_method_is_method_not_found(modern: StdioProcess) -> None:
    response, _ = exchange(modern, modern_request(16, "no/such/method"))
    assert response["error"]["code"] == -32601
    assert_serving(modern)


def test_oversized_line_is_refused_and_the_next_line_works(modern: StdioProcess) -> None:
    big = (
        b'{"jsonrpc":"2.0","id":17,"method":"tools/list","params":{"x":"'
        + b"a" * (17 * 1024 * 1024)
        + b'"}}\n'
    )
    modern.send_raw(big)
    error = modern.recv(timeout=30)
    validate_outgoing(MODERN, error)
    assert error["error"]["code"] == -32600 and "id" not in error
    assert_serving(modern)


def test_a_burst_past_the_readers_backlog_bound_is_all_answered(modern: StdioProcess) -> None:
    # Several times what the server's pipe reader holds before it pauses reading (512 KiB):
    # reading must pause and resume, losing and reordering nothing of one request's line.
    ids = [f"burst-{n}" for n in range(12000)]
    modern.send_raw(
        b"".join(json.dumps(modern_request(i, "no/such")).encode() + b"\n" for i in ids)
    )
    answered = [modern.recv(timeout=30) for _ in ids]
    assert [a["id"] for a in answered if a["error"]["code"] == -32601] == ids
    assert_serving(modern)


def test_crlf_blank_lines_and_split_writes(modern: StdioProcess) -> None:
    line = json.dumps(modern_request(18, "tools/list")).encode()
    modern.send_raw(b"\n\r\n   \n" + line[:10])
    time.sleep(0.05)
    modern.send_raw(line[10:] + b"\r\n")
    response = modern.recv()
    validate_outgoing(MODERN, response, request_method="tools/list")
    assert response["id"] == 18


def test_notifications_get_no_answer(modern: StdioProcess) -> None:
    notes: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "method": "notifications/unknown"},
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "never-existed"},
        },
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}},
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "unknown", "progress": 1},
        },
        {"jsonrpc": "2.0", "id": "stray", "result": {}},
    ]
    for note in notes:
        modern.send(note)
    response, others = exchange(modern, modern_request(19, "tools/list"))
    assert others == [] and "result" in response


# --------------------------------------------------------------------------- legacy era


def sampling_answer(request: dict[str, Any]) -> dict[str, Any]:
    assert request["method"] == "sampling/createMessage"
    text = request["params"]["messages"][0]["content"]["text"]
    return {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {
            "role": "assistant",
            "content": {"type": "text", "text": f"echo {text}"},
            "model": "test-model",
        },
    }


def initialize(proc: StdioProcess, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    response, _ = exchange(proc, initialize_request(0, LEGACY, capabilities), LEGACY)
    proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    result: dict[str, Any] = response["result"]
    return result


def test_legacy_session_with_sampling_answered_over_the_pipe(fresh: StdioProcess) -> None:
    before, _ = exchange(fresh, legacy_request(1, "tools/list"), LEGACY)
    assert before["error"]["code"] == -32600  # not initialized yet
    result = initialize(fresh, {"sampling": {}})
    assert result["protocolVersion"] == "2025-11-25"
    tools, _ = exchange(fresh, legacy_request(2, "tools/list"), LEGACY)
    assert any(t["name"] == "test_sampling" for t in tools["result"]["tools"])
    call = legacy_request(
        3, "tools/call", {"name": "test_sampling", "arguments": {"prompt": "over stdio"}}
    )
    response, others = exchange(fresh, call, LEGACY, answer=sampling_answer)
    assert [o["method"] for o in others] == ["sampling/createMessage"]
    assert response["result"]["content"][0]["text"] == "LLM response: echo over stdio"
    again, _ = exchange(fresh, initialize_request(4), LEGACY)
    assert again["error"]["code"] == -32600
    # the modern era still works in the same process
    assert_serving(fresh)


def test_legacy_logging_and_list_changed(fresh: StdioProcess) -> None:
    initialize(fresh)
    bad, _ = exchange(fresh, legacy_request(1, "logging/setLevel", {"level": "loud"}), LEGACY)
    assert bad["error"]["code"] == -32602
    ok, _ = exchange(fresh, legacy_request(2, "logging/setLevel", {"level": "info"}), LEGACY)
    assert ok["result"] == {}
    response, others = exchange(
        fresh, legacy_request(3, "tools/call", {"name": "test_tool_with_logging"}), LEGACY
    )
    assert [o["params"]["data"] for o in others] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    assert all(o["method"] == "notifications/message" for o in others)
    assert "result" in response
    response, others = exchange(
        fresh, legacy_request(4, "tools/call", {"name": "test_trigger_tool_change"}), LEGACY
    )
    if not others:
        others = [fresh.recv()]
        validate_outgoing(LEGACY, others[0])
    assert others[0] == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def test_legacy_client_error_answer_reaches_the_tool(fresh: StdioProcess) -> None:
    initialize(fresh, {"elicitation": {}})

    def refuse(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -1, "message": "user closed the dialog"},
        }

    response, others = exchange(
        fresh,
        legacy_request(
            1, "tools/call", {"name": "test_elicitation", "arguments": {"message": "Name?"}}
        ),
        LEGACY,
        answer=refuse,
    )
    assert [o["method"] for o in others] == ["elicitation/create"]
    assert response.get("result", {}).get("isError") or "error" in response
    assert_serving(fresh)


def test_cancelling_a_call_cancels_its_pending_server_request(fresh: StdioProcess) -> None:
    initialize(fresh, {"sampling": {}})
    fresh.send(
        legacy_request(
            "call-1",
            "tools/call",
            {"name": "test_sampling", "arguments": {"prompt": "never answered"}},
        )
    )
    sampling = fresh.recv()
    validate_outgoing(LEGACY, sampling)
    assert sampling["method"] == "sampling/createMessage"
    fresh.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "call-1"}}
    )
    cancelled = fresh.recv()
    validate_outgoing(LEGACY, cancelled)
    assert cancelled == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": sampling["id"]},
    }
    # a late answer to the abandoned request is ignored, and call-1 never gets a response
    fresh.send(
        {
            "jsonrpc": "2.0",
            "id": sampling["id"],
            "result": {
                "role": "assistant",
                "content": {"type": "text", "text": "late"},
                "model": "m",
            },
        }
    )
    response, others = exchange(fresh, legacy_request(2, "ping"), LEGACY)
    assert response["result"] == {} and others == []
    assert fresh.no_output(0.3)


# --------------------------------------------------------------------------- process lifetime


@pytest.mark.parametrize("in_flight", [False, True])
def test_stdin_eof_exits_promptly_with_code_0(fresh: StdioProcess, in_flight: bool) -> None:
    assert_serving(fresh)
    if in_flight:
        fresh.send(
            modern_request(
                "long", "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}
            )
        )
    fresh.close_stdin()
    try:
        code = fresh.process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pytest.fail(f"server still running 5 s after stdin EOF\n{fresh.stderr_tail()}")
    assert code == 0, fresh.stderr_tail()
    # nothing after EOF but possibly the lost request's silence
    assert all(json.loads(line) for line in fresh.raw_lines)


def test_print_in_a_tool_does_not_corrupt_stdout(tmp_path: Path) -> None:
    proc = StdioProcess(SERVERS_DIR / "print_server.py", tmp_path)
    try:
        response, others = exchange(proc, modern_request(1, "tools/call", {"name": "noisy"}))
        assert others == []
        assert response["result"]["content"][0]["text"] == "quiet result"
        echo, _ = exchange(
            proc,
            modern_request(
                2, "tools/call", {"name": "echo", "arguments": {"text": "line\nbreak \u2028 sep"}}
            ),
        )
        assert echo["result"]["content"][0]["text"] == "line\nbreak \u2028 sep"
        proc.close_stdin()
        assert proc.process.wait(timeout=5) == 0
        stderr = proc.stderr_tail(100)
        for text in (
            "print() from a tool",
            "raw write to fd 1",
            "child process on inherited stdout",
        ):
            assert text in stderr
        assert len(proc.raw_lines) == 2  # exactly the two responses, nothing else
    finally:
        proc.stop()


def test_print_at_import_time_does_not_corrupt_stdout(tmp_path: Path) -> None:
    proc = StdioProcess(SERVERS_DIR / "import_print_server.py", tmp_path)
    try:
        response, _ = exchange(proc, modern_request(1, "tools/call", {"name": "ping_tool"}))
        assert response["result"]["content"][0]["text"] == "pong"
    finally:
        proc.stop()


def test_unencodable_result_does_not_kill_the_server(tmp_path: Path) -> None:
    proc = StdioProcess(SERVERS_DIR / "print_server.py", tmp_path)
    try:
        response, _ = exchange(proc, modern_request(1, "tools/call", {"name": "surrogate"}))
        assert response.get("error") or response["result"]
        echo, _ = exchange(
            proc,
            modern_request(2, "tools/call", {"name": "echo", "arguments": {"text": "still here"}}),
        )
        assert echo["result"]["content"][0]["text"] == "still here"
    finally:
        proc.stop()


def test_requests_from_a_regular_file(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(legacy_request(1, "ping")) + "\n")
    with open(requests, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "mcpkit", "serve", str(CONFORMANCE_SERVER)],
            stdin=stdin,
            capture_output=True,
            cwd=tmp_path,
            env=subprocess_env(),
            timeout=20,
        )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert json.loads(done.stdout.splitlines()[0]) == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_bad_target_exits_with_code_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "serve", str(tmp_path / "missing.py")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=REPO_ROOT,
        env=subprocess_env(),
        timeout=20,
    )
    assert done.returncode == 2
    assert b"no such file" in done.stderr
    assert done.stdout == b""
    assert os.path.exists(REPO_ROOT)  # nothing else to check: no traceback on a user error
    assert b"Traceback" not in done.stderr
