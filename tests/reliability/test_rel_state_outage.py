"""The state store going away under a gateway and a server, and coming back.

A gateway (``state = "redis://..."``, a rate-limited tool) in front of a server that keeps
its tasks in the same Redis.  Redis is SIGKILLed while a loop of calls runs and restarted
after about ten seconds:

* every answer is a JSON-RPC message with its request's id: while Redis is down, HTTP 503
  and the state-unavailable code, ``data`` naming the kind of store (never its URL);
* the gateway's audit line says ``state_unavailable``; ``/readyz`` is 503 naming the store;
* each process writes at most a handful of log lines for the whole outage (one when the
  store goes, one when it returns), no traceback;
* calls succeed again soon after Redis is back (polled with a bound).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from relkit import (
    ROOT,
    Reply,
    assert_rpc_error,
    call_tool,
    next_id,
    persistent_redis,
    post,
    to_reply,
)

from support.mcp import modern_request
from support.servers import free_port, kill_group, need
from support.waits import poll

sys.path.insert(0, str(ROOT / "tests" / "gateway"))
import gwkit

#: The documented code of a request that needed the state store while it was unreachable.
STATE_UNAVAILABLE = -31050
OUTAGE_S = 10.0
MAX_LOG_LINES = 40
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

CONFIG = """
[gateway]
state = "{redis}"
audit_log = "{audit}"

[[rate_limit]]
name = "greetings"
limit = "10000/minute"
methods = ["tools/call"]
names = ["*greet"]
"""


def _lines(path: Path) -> int:
    try:
        return len(path.read_text(errors="replace").splitlines())
    except FileNotFoundError:
        return 0


def _greet(http: httpx.Client, gateway: gwkit.Proc) -> tuple[int, Reply]:
    rid = next_id()
    return rid, post(http, gateway.url, call_tool(rid, "greet", {"name": "outage"}))


def _task_status(http: httpx.Client, url: str, task_id: str) -> tuple[int, Reply]:
    rid = next_id()
    message = modern_request(rid, "tasks/get", {"taskId": task_id}, capabilities=TASKS)
    return rid, post(http, url, message)


def _ok(reply: Reply) -> bool:
    return reply.status == 200 and isinstance(reply.body, dict) and "result" in reply.body


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One Redis crash and restart under a gateway and a server; the tests check parts of
    what was seen (the scenario runs once)."""
    need("redis-server")
    tmp = tmp_path_factory.mktemp("state-outage")
    data = tmp / "redis"
    data.mkdir()
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    seen: dict[str, Any] = {"calls": [], "tasks": [], "legacy": [], "ready": []}
    with contextlib.ExitStack() as stack:
        redis_proc = stack.enter_context(persistent_redis(data, port))
        server = gwkit.start_upstream("srv", tmp, gwkit.CONFORMANCE, "--state", url)
        stack.callback(server.stop)
        config = CONFIG.format(redis=url, audit=tmp / "audit.jsonl")
        config += gwkit.toml_upstream("srv", url=server.url)
        gateway = gwkit.start_gateway("gw", tmp, config)
        stack.callback(gateway.stop)
        http = stack.enter_context(httpx.Client(timeout=20))

        message = modern_request(
            next_id(),
            "tools/call",
            {"name": "slow_compute", "arguments": {"seconds": 0.05}},
            capabilities=TASKS,
        )
        task_id = str(post(http, server.url, message).result["taskId"])
        seen["before"] = _greet(http, gateway)[1]
        legacy = gwkit.LegacySession(server.url)  # its session lives in Redis
        stack.callback(legacy.close)
        assert legacy.initialize().status == 200

        kill_group(redis_proc, signal.SIGKILL)
        logged = {"gateway": _lines(gateway.log), "server": _lines(server.log)}
        down_until = time.monotonic() + OUTAGE_S
        while time.monotonic() < down_until:
            seen["calls"].append(_greet(http, gateway))
            seen["tasks"].append(_task_status(http, server.url, task_id))
            rid = next_id()
            listing = {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {}}
            seen["legacy"].append((rid, to_reply(legacy.post(listing))))
            seen["ready"].append(httpx.get(gateway.base + "/readyz", timeout=10))
            time.sleep(0.2)
        seen["log_lines"] = {
            "gateway": _lines(gateway.log) - logged["gateway"],
            "server": _lines(server.log) - logged["server"],
        }
        seen["log_during"] = gateway.tail(60) + "\n" + server.tail(60)

        stack.enter_context(persistent_redis(data, port))
        seen["recovered"] = poll(
            lambda: (
                _ok(_greet(http, gateway)[1]) and _ok(_task_status(http, server.url, task_id)[1])
            ),
            15,
        )
        seen["ready_after"] = poll(
            lambda: httpx.get(gateway.base + "/readyz", timeout=10).status_code == 200, 15
        )
        seen["audit"] = [
            json.loads(line) for line in (tmp / "audit.jsonl").read_text().splitlines() if line
        ]
        seen["log_after"] = gateway.tail(20) + "\n" + server.tail(20)
        seen["back_lines"] = {
            name: [line for line in proc.tail(400).splitlines() if "reachable again" in line]
            for name, proc in (("gateway", gateway), ("server", server))
        }
        yield seen


@pytest.mark.slow
def test_every_answer_during_the_outage_is_json_rpc_with_its_id(outage: dict[str, Any]) -> None:
    assert _ok(outage["before"]), outage["before"].describe()
    answers = outage["calls"] + outage["tasks"] + outage["legacy"]
    assert len(outage["calls"]) >= 5
    unavailable = 0
    for rid, reply in answers:
        if _ok(reply):  # (the first call may still have found its connection)
            continue
        assert_rpc_error(reply, 503, STATE_UNAVAILABLE, rid)
        assert reply.error["data"] == {"stateStore": "redis"}, reply.describe()
        assert "127.0.0.1" not in reply.describe()
        unavailable += 1
    assert unavailable >= len(answers) - 2


@pytest.mark.slow
def test_the_outage_is_audited_and_readyz_names_the_store(outage: dict[str, Any]) -> None:
    outcomes = [line.get("outcome") for line in outage["audit"]]
    assert "state_unavailable" in outcomes, outcomes
    statuses = [r.status_code for r in outage["ready"]]
    assert statuses and all(s == 503 for s in statuses[1:]), statuses
    body = outage["ready"][-1].json()
    assert body["ready"] is False and body["stateStore"] == {"kind": "redis", "up": False}
    assert "127.0.0.1" not in outage["ready"][-1].text


@pytest.mark.slow
def test_the_outage_is_a_few_log_lines_not_a_flood(outage: dict[str, Any]) -> None:
    for process, count in outage["log_lines"].items():
        assert count <= MAX_LOG_LINES, f"{process}: {count} lines\n{outage['log_during']}"
    assert "Traceback" not in outage["log_during"], outage["log_during"]


@pytest.mark.slow
def test_calls_succeed_once_the_store_is_back(outage: dict[str, Any]) -> None:
    assert outage["recovered"], outage["log_after"]
    assert outage["ready_after"], outage["log_after"]
    for process, lines in outage["back_lines"].items():  # one line says it is back
        assert len(lines) == 1, (process, outage["log_after"])
