"""Requests the request runner starts on the stdio reader (a call's first step runs there,
with no task and no cancel scope; one that waits keeps the reader's task and reading goes
on in a new one): what that must keep.  A real ``python -m mcpkit serve`` subprocess on
real pipes; tests/transports/test_memory_route.py holds the same over memory."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.mcp import modern_request
from support.schema import MODERN, validate_outgoing
from support.servers import SERVERS_DIR, StdioProcess


@pytest.fixture
def proc(tmp_path: Path) -> Iterator[StdioProcess]:
    process = StdioProcess(SERVERS_DIR / "inline_server.py", tmp_path)
    yield process
    process.stop()


def call(rid: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return modern_request(rid, "tools/call", {"name": name, "arguments": arguments})


def answer(proc: StdioProcess) -> dict[str, Any]:
    message = proc.recv()
    validate_outgoing(MODERN, message, request_method="tools/call")
    return message


def text(message: dict[str, Any]) -> str:
    assert "result" in message, message
    return str(message["result"]["content"][0]["text"])


def test_a_returned_awaitable_that_enters_a_cancel_scope_waits_in_its_own_task(
    proc: StdioProcess,
) -> None:
    proc.send(call("slow", "later", seconds=0.4))
    proc.send(call("fast", "echo", text="meanwhile"))
    first, second = answer(proc), answer(proc)
    # The reader went on while the first call waited: the second is answered first.
    assert (first["id"], text(first)) == ("fast", "meanwhile")
    assert (second["id"], text(second)) == ("slow", "waited 0.4")
    assert proc.process.poll() is None
    assert "Traceback" not in proc.stderr_tail(200)


def test_many_waiting_calls_interleave_with_immediate_ones(proc: StdioProcess) -> None:
    for i in range(20):
        proc.send(call(f"w{i}", "later", seconds=0.2))
        proc.send(call(f"e{i}", "echo", text=str(i)))
    got = {}
    for _ in range(40):
        message = answer(proc)
        got[message["id"]] = text(message)
    assert got == {
        **{f"w{i}": "waited 0.2" for i in range(20)},
        **{f"e{i}": str(i) for i in range(20)},
    }


def test_a_context_variable_set_by_a_tool_does_not_leak_into_the_next_request(
    proc: StdioProcess,
) -> None:
    for rid, value in enumerate(("first", "second", "third")):
        proc.send(call(rid, "remember", value=value))
        assert text(answer(proc)) == "unset"


def wait_for_status(proc: StdioProcess, expected: str) -> None:
    deadline = time.monotonic() + 10
    while True:
        proc.send(call("probe", "status"))
        message = answer(proc)
        assert message["id"] == "probe", message  # never an answer to a hanging call
        if text(message) == expected:
            return
        assert time.monotonic() < deadline, f"status stays {text(message)!r}, not {expected!r}"
        time.sleep(0.02)


def cancel(proc: StdioProcess, rid: str) -> None:
    proc.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "test"},
        }
    )


def test_cancelling_a_call_that_waits_cancels_it_and_sends_no_answer(proc: StdioProcess) -> None:
    proc.send(call("h1", "hang", tag="h1"))
    proc.send(call("h2", "hang", tag="h2"))
    wait_for_status(proc, "started:h1,h2;cancelled:")
    cancel(proc, "h1")
    wait_for_status(proc, "started:h1,h2;cancelled:h1")  # h2 still waits
    proc.send(call("after", "echo", text="still serving"))
    assert text(answer(proc)) == "still serving"
    assert proc.no_output(0.3)


def test_a_call_cancelled_in_the_write_that_carries_it_is_cancelled_without_an_answer(
    proc: StdioProcess,
) -> None:
    # Request and cancellation in one write: the call's first step runs as it is read (a
    # returned awaitable is awaited at once, as an async def's coroutine is), and the
    # cancellation read next ends it where it waits.
    proc.send_raw(
        json.dumps(call("h1", "hang", tag="h1")).encode()
        + b"\n"
        + json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "h1"}}
        ).encode()
        + b"\n"
    )
    wait_for_status(proc, "started:h1;cancelled:h1")
    proc.send(call("after", "echo", text="still serving"))
    assert text(answer(proc)) == "still serving"
    assert proc.no_output(0.3)
    proc.close_stdin()
    assert proc.process.wait(timeout=10) == 0
    assert "never awaited" not in proc.stderr_tail(200)


def test_an_async_tool_that_never_waits_runs_on_the_reader(proc: StdioProcess) -> None:
    # No task of its own: both calls run in the one task reading stdin.
    proc.send(call(1, "task_name"))
    first = text(answer(proc))
    proc.send(call(2, "task_name"))
    assert text(answer(proc)) == first


def test_a_call_that_waits_ends_in_the_task_its_first_step_ran_in(proc: StdioProcess) -> None:
    proc.send(call(1, "same_task"))
    assert text(answer(proc)) == "same task"
