"""Era bridging through the gateway, both ways, over real processes:

* a 2026-07-28 client calls a tool of a legacy-only upstream that elicits: the upstream's
  ``elicitation/create`` *request* becomes an ``InputRequiredResult`` for the client, and
  the client's retry (``inputResponses`` + ``requestState``) gets the real answer;
* a 2025-11-25 client calls a tool of a modern-only upstream that answers
  ``input_required``: the client gets a real ``elicitation/create`` request on its stream;
* upstreams whose tool names clash are all reachable under their prefixes;
* one pooled upstream session: a legacy upstream is initialized once, not per call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gwkit
import httpx
import pytest

from mcpkit.client import Client, ElicitResult
from mcpkit.types.versions import EraChoice

ELICIT: dict[str, Any] = {"elicitation": {}}


@pytest.fixture(scope="module")
def gateway(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    legacy, modern, counter = gwkit.start_upstreams(
        log_dir,
        ("legacy", gwkit.CONFORMANCE, "--no-modern"),
        ("modern", gwkit.CONFORMANCE, "--no-legacy"),
        ("counter", gwkit.ECHO, "--no-modern"),
    )
    stack.extend([legacy, modern, counter])
    config = (
        '[gateway]\nstate = "memory:"\n'
        + gwkit.toml_upstream("legacy", url=legacy.url, prefix="leg_")
        + gwkit.toml_upstream("modern", url=modern.url, prefix="mod_")
        + gwkit.toml_upstream("counter", url=counter.url, prefix="cnt_")
        + gwkit.toml_upstream(
            "stdio",
            command=gwkit.serve_command(gwkit.ECHO),
            prefix="sio_",
            era="legacy",
            env={"ECHO_NAME": "stdio"},
        )
    )
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


# ------------------------------------------------------------------ modern client, legacy upstream


def test_modern_client_gets_input_required_for_a_legacy_upstream_request(
    gateway: gwkit.Proc,
) -> None:
    params = {"name": "leg_test_elicitation", "arguments": {"message": "Who are you?"}}
    first = gwkit.call(gateway.url, "tools/call", params, caps=ELICIT)
    assert first.status == 200, first.body
    result = first.result
    assert result["resultType"] == "input_required", result
    assert "requestState" in result
    [(key, ask)] = result["inputRequests"].items()
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["message"] == "Who are you?"
    assert set(ask["params"]["requestedSchema"]["properties"]) == {"username", "email"}

    answer = {"action": "accept", "content": {"username": "ann", "email": "ann@example.com"}}
    retry = {**params, "inputResponses": {key: answer}, "requestState": result["requestState"]}
    second = gwkit.call(gateway.url, "tools/call", retry, caps=ELICIT)
    done = second.result
    assert done["resultType"] == "complete", done
    assert done["content"][0]["text"] == (
        "User response: action=accept, content={'username': 'ann', 'email': 'ann@example.com'}"
    )


def test_bridged_request_state_is_sealed_and_bound(gateway: gwkit.Proc) -> None:
    params = {"name": "leg_test_elicitation", "arguments": {"message": "x"}}
    first = gwkit.call(gateway.url, "tools/call", params, caps=ELICIT).result
    key = next(iter(first["inputRequests"]))
    answer = {"action": "accept", "content": {"username": "u", "email": "e"}}
    tampered = first["requestState"][:-4] + (
        "AAAA" if not first["requestState"].endswith("AAAA") else "BBBB"
    )
    bad = gwkit.call(
        gateway.url,
        "tools/call",
        {**params, "inputResponses": {key: answer}, "requestState": tampered},
        caps=ELICIT,
    )
    assert bad.error["code"] == -32602, bad.body
    # The state of one tool cannot be replayed against another.
    other = {"name": "leg_test_elicitation_sep1034_defaults", "arguments": {}}
    moved = gwkit.call(
        gateway.url,
        "tools/call",
        {**other, "inputResponses": {key: answer}, "requestState": first["requestState"]},
        caps=ELICIT,
    )
    assert moved.error["code"] == -32602, moved.body


def test_modern_client_without_elicitation_capability_is_told_so(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "leg_test_elicitation", "arguments": {"message": "x"}},
        caps={},
    )
    assert reply.status == 400, reply.body
    assert reply.error["code"] == -32021
    assert "elicitation" in json.dumps(reply.error["data"])


@pytest.mark.anyio
async def test_modern_client_multi_round_on_legacy_upstream(gateway: gwkit.Proc) -> None:
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> ElicitResult:
        asked.append(params["message"])
        if "name" in params["message"]:
            return {"action": "accept", "content": {"name": "Ann"}}
        return {"action": "accept", "content": {"color": "blue"}}

    async with Client(gateway.url, elicitation=elicit, era="modern") as client:
        assert client.era == "modern"
        result = await client.call_tool("leg_test_input_required_result_multi_round")
    assert result["content"][0]["text"] == "Ann likes blue."
    assert asked == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]


# ------------------------------------------------------------------ legacy client, modern upstream


def test_legacy_client_gets_a_real_elicitation_request_from_a_modern_upstream(
    gateway: gwkit.Proc,
) -> None:
    session = gwkit.LegacySession(gateway.url, capabilities=ELICIT)
    try:
        assert session.initialize().status == 200
        body = {
            "jsonrpc": "2.0",
            "id": "call-1",
            "method": "tools/call",
            "params": {"name": "mod_test_input_required_result_elicitation"},
        }
        seen: list[dict[str, Any]] = []
        final: dict[str, Any] | None = None
        with session.http.stream(
            "POST", gateway.url, headers=session.headers(), content=json.dumps(body)
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if not line.startswith("data:") or not line[5:].strip():
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "elicitation/create":
                    seen.append(message)
                    assert "id" in message  # a real request, to be answered
                    reply = {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"action": "accept", "content": {"name": "Bea"}},
                    }
                    answered = httpx.post(
                        gateway.url, headers=session.headers(), content=json.dumps(reply)
                    )
                    assert answered.status_code == 202
                elif message.get("id") == "call-1":
                    final = message
                    break
        assert len(seen) == 1
        assert seen[0]["params"]["message"] == "What is your name?"
        assert seen[0]["params"]["requestedSchema"]["required"] == ["name"]
        assert final is not None and final["result"]["content"][0]["text"] == "Hello, Bea!"
    finally:
        session.close()


@pytest.mark.anyio
async def test_legacy_client_multi_round_on_modern_upstream(gateway: gwkit.Proc) -> None:
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> ElicitResult:
        asked.append(params["message"])
        if "name" in params["message"]:
            return {"action": "accept", "content": {"name": "Cy"}}
        return {"action": "accept", "content": {"color": "red"}}

    async with Client(gateway.url, elicitation=elicit, era="legacy") as client:
        assert client.era == "legacy"
        result = await client.call_tool("mod_test_input_required_result_multi_round")
    assert result["content"][0]["text"] == "Cy likes red."
    assert asked == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]


# ------------------------------------------------------------------ clashing names, pooling


def test_clashing_tool_names_are_all_reachable(gateway: gwkit.Proc) -> None:
    tools = [t["name"] for t in gwkit.call(gateway.url, "tools/list").result["tools"]]
    assert "leg_test_simple_text" in tools and "mod_test_simple_text" in tools
    assert "test_simple_text" not in tools
    for name in ("leg_test_simple_text", "mod_test_simple_text"):
        reply = gwkit.call(gateway.url, "tools/call", {"name": name, "arguments": {}})
        assert reply.text() == "This is a simple text response for testing."


def test_legacy_upstream_is_initialized_once(gateway: gwkit.Proc) -> None:
    def stats() -> dict[str, int]:
        reply = gwkit.call(gateway.url, "tools/call", {"name": "cnt_stats", "arguments": {}})
        counts: dict[str, int] = gwkit.structured(reply)
        return counts

    before = stats()
    assert before["initialize"] == 1, before
    for _ in range(8):
        assert (
            gwkit.call(gateway.url, "tools/call", {"name": "cnt_whoami", "arguments": {}}).text()
            == "counter"
        )
    session = gwkit.LegacySession(gateway.url)
    try:
        session.initialize()
        for _ in range(4):
            assert session.request("tools/call", {"name": "cnt_whoami"}).text() == "counter"
        session.request("prompts/get", {"name": "cnt_greeting", "arguments": {"who": "x"}})
        session.request("resources/read", {"uri": "echo://counter/info"})
    finally:
        session.close()
    after = stats()
    assert after["initialize"] == 1, after
    assert after["tools/call"] - before["tools/call"] == 8 + 4 + 1
    assert after["prompts/get"] == before.get("prompts/get", 0) + 1


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_input_requests_of_a_legacy_stdio_upstream(
    gateway: gwkit.Proc, era: EraChoice
) -> None:
    """A legacy stdio upstream's elicitation/create arrives on the process's stdout, not
    tied to a request: with one call in flight the gateway knows whose it is."""
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> ElicitResult:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Dot"}}

    async with Client(gateway.url, elicitation=elicit, era=era) as client:
        result = await client.call_tool("sio_ask")
    assert result["content"][0]["text"] == "stdio greets Dot (accept)"
    assert asked == ["stdio asks: what is your name?"]


def test_progress_of_a_legacy_upstream_reaches_a_modern_client(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "leg_test_tool_with_progress", "arguments": {}},
        extra_meta={"progressToken": "p-1"},
    )
    assert reply.text() == "Progress tool completed"
    progress = [n["params"] for n in reply.notifications if n["method"] == "notifications/progress"]
    assert [p["progress"] for p in progress] == [0, 50, 100], reply.notifications
    assert all(p["progressToken"] == "p-1" for p in progress)


@pytest.mark.anyio
async def test_progress_of_a_modern_upstream_reaches_a_legacy_client(gateway: gwkit.Proc) -> None:
    seen: list[float] = []

    async def on_progress(update: dict[str, Any]) -> None:
        seen.append(update["progress"])

    async with Client(gateway.url, era="legacy") as client:
        result = await client.call_tool("mod_test_tool_with_progress", on_progress=on_progress)
    assert result["content"][0]["text"] == "Progress tool completed"
    assert seen == [0, 50, 100]


# ------------------------------------------------------------------ modern to modern (fast lane)


def test_progress_and_logs_of_a_modern_upstream_reach_a_modern_client(
    gateway: gwkit.Proc,
) -> None:
    """Modern to modern takes the gateway's fast lane (raw pooled HTTP/1.1): the
    upstream's SSE answer is decoded there, progress relayed under the front token and
    log messages at the level the front client asked for."""
    reply = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "mod_test_tool_with_progress", "arguments": {}},
        extra_meta={"progressToken": "front-7"},
    )
    assert reply.text() == "Progress tool completed"
    progress = [n["params"] for n in reply.notifications if n["method"] == "notifications/progress"]
    assert [p["progress"] for p in progress] == [0, 50, 100], reply.notifications
    assert all(p["progressToken"] == "front-7" for p in progress)

    reply = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "mod_test_tool_with_logging", "arguments": {}},
        extra_meta={"io.modelcontextprotocol/logLevel": "info"},
    )
    assert reply.text() == "Tool with logging executed successfully"
    logs = [
        n["params"]["data"] for n in reply.notifications if n["method"] == "notifications/message"
    ]
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]


def test_upstream_errors_pass_through_the_fast_lane(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(gateway.url, "tools/call", {"name": "mod_no_such_tool", "arguments": {}})
    assert reply.error["code"] == -32602  # unknown tool: the gateway's own answer
    reply = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "mod_test_error_handling", "arguments": {}},
    )
    assert reply.result["isError"] is True
