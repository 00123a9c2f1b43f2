"""Callers bound to what they create, and resource URIs kept by their first owner, over
real HTTP against a gateway process with two upstreams of ``tests/servers/owned.py``.

alice and bob both hold valid tokens.  The upstreams see the gateway's identity for
every caller, so the gateway itself binds the task ids and handles it hands out: what
bob names of alice's is answered exactly as an unknown one.  An upstream that starts
serving another's URI (or ``ui://`` view) at run time does not take it over.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gwkit
import pytest

from support.waits import eventually

OWNED = "tests/servers/owned.py"
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
ALICE, BOB = gwkit.ALICE, gwkit.BOB

CONFIG = """
default_effect = "allow"

[gateway]
state = "memory:"
audit_log = "{audit}"

[auth]
mode = "bearer"

[auth.tokens]
"{alice}" = {{ principal = "alice" }}
"{bob}" = {{ principal = "bob" }}

[[server]]
name = "v"
path = "/mcp/v"
tools = ["a_*"]

{upstreams}
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[gwkit.Proc]:
    logs = tmp_path_factory.mktemp("binding")
    alpha, beta = (gwkit.spawn_upstream(n, logs, OWNED, OWNED_NAME=n) for n in ("alpha", "beta"))
    for upstream in (alpha, beta):
        gwkit.wait_port(upstream)
    upstreams = gwkit.toml_upstream("alpha", url=alpha.url, prefix="a_") + gwkit.toml_upstream(
        "beta", url=beta.url, prefix="b_"
    )
    audit = logs / "audit.jsonl"
    config = CONFIG.format(alice=ALICE, bob=BOB, upstreams=upstreams, audit=audit)
    gw = gwkit.start_gateway(
        "gw", logs, config, flags=["--log-format", "json"], MCPKIT_SEALING_KEYS="binding-tests-key"
    )
    try:
        yield gw
    finally:
        for proc in (gw, alpha, beta):
            proc.stop()


def _ask(url: str, token: str, method: str, params: dict[str, Any]) -> gwkit.Reply:
    return gwkit.call(url, method, params, caps=TASKS, token=token)


def _start_task(url: str, token: str, key: str) -> str:
    created = _ask(url, token, "tools/call", {"name": "a_hold", "arguments": {"key": key}})
    assert created.result["resultType"] == "task", created.body
    task_id: str = created.result["taskId"]
    return task_id


def _as_unknown(url: str, token: str, method: str, task_id: str) -> None:
    """``method`` on ``task_id`` is answered exactly as on an id that never existed."""
    foreign = _ask(url, token, method, {"taskId": task_id})
    made_up = task_id[:-6] + ("AAAAAA" if not task_id.endswith("AAAAAA") else "BBBBBB")
    unknown = _ask(url, token, method, {"taskId": made_up})
    assert foreign.status == unknown.status, (foreign.body, unknown.body)
    assert "result" not in foreign.body, f"{method} answered: {foreign.body}"
    expected = str(unknown.error).replace(made_up, task_id)
    assert str(foreign.error) == expected


def _status(url: str, token: str, task_id: str) -> dict[str, Any]:
    return _ask(url, token, "tasks/get", {"taskId": task_id}).result


def _release(gateway: gwkit.Proc, key: str) -> None:
    released = _ask(
        gateway.url, ALICE, "tools/call", {"name": "a_release", "arguments": {"key": key}}
    )
    assert released.text() == "released"


def _check_isolated(gateway: gwkit.Proc, create_at: str, probe_at: str, key: str) -> None:
    hers = _start_task(create_at, ALICE, key)
    assert key not in hers  # (nothing of the call in the id)
    for method in ("tasks/get", "tasks/cancel"):
        _as_unknown(probe_at, BOB, method, hers)
    # bob's cancel did nothing: her task still runs, then ends with her result
    assert _status(create_at, ALICE, hers)["status"] == "working"
    _release(gateway, key)
    done = eventually(
        lambda: (s := _status(create_at, ALICE, hers))["status"] == "completed" and s,
        15,
        "alice's task completes",
    )
    assert done["taskId"] == hers
    assert done["result"]["content"][0]["text"] == f"alpha finished {key}"
    _as_unknown(probe_at, BOB, "tasks/get", hers)


def test_a_caller_cannot_get_or_cancel_another_callers_task(gateway: gwkit.Proc) -> None:
    _check_isolated(gateway, gateway.url, gateway.url, "direct-1")


def test_a_caller_cannot_get_or_cancel_another_callers_task_through_a_virtual_server(
    gateway: gwkit.Proc,
) -> None:
    view = gateway.base + "/mcp/v"
    _check_isolated(gateway, view, view, "view-1")
    _check_isolated(gateway, gateway.url, view, "view-2")


def test_the_audit_log_names_tasks_by_a_hash(gateway: gwkit.Proc) -> None:
    hers = _start_task(gateway.url, ALICE, "audit-1")
    _status(gateway.url, ALICE, hers)
    _release(gateway, "audit-1")
    audit = gateway.log.parent / "audit.jsonl"
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    polls = [line for line in lines if line["method"] == "tasks/get"]
    assert polls, lines[-5:]
    assert all(str(line["name"]).startswith("sha256:") for line in polls)
    assert hers not in audit.read_text()


def _call(gateway: gwkit.Proc, token: str, tool: str, **arguments: Any) -> gwkit.Reply:
    return gwkit.call(
        gateway.url, "tools/call", {"name": tool, "arguments": arguments}, token=token
    )


def test_a_caller_cannot_use_another_callers_handle(gateway: gwkit.Proc) -> None:
    handle = _call(gateway, ALICE, "a_open_box", secret="alice's secret").text()
    assert _call(gateway, ALICE, "a_read_box", handle=handle).text() == "alice's secret"
    # bob's own handle works for him...
    his = _call(gateway, BOB, "a_open_box", secret="bob's").text()
    assert _call(gateway, BOB, "a_read_box", handle=his).text() == "bob's"
    # ...hers is answered as one that never existed, twice (direct path or not)
    made_up = handle[:-6] + ("AAAAAA" if not handle.endswith("AAAAAA") else "BBBBBB")
    for _ in range(2):
        foreign = _call(gateway, BOB, "a_read_box", handle=handle)
        unknown = _call(gateway, BOB, "a_read_box", handle=made_up)
        assert foreign.result.get("isError") is True, foreign.body
        assert foreign.status == unknown.status
        assert str(foreign.result).replace(handle, made_up) == str(unknown.result)
        assert "alice's secret" not in str(foreign.body)
    assert _call(gateway, ALICE, "a_read_box", handle=handle).text() == "alice's secret"


ELICIT: dict[str, Any] = {"elicitation": {}}


def _round(
    gateway: gwkit.Proc, token: str, method: str = "tools/call", **more: Any
) -> dict[str, Any]:
    name = "a_two_words" if method == "tools/call" else "a_two_words_prompt"
    params = {"name": name, "arguments": {}, **more}
    return gwkit.call(gateway.url, method, params, caps=ELICIT, token=token).body


def _answer(word: str, asked: dict[str, Any]) -> dict[str, Any]:
    key = next(iter(asked["inputRequests"]))
    return {key: {"action": "accept", "content": {"word": word}}}


def _text_of(method: str, result: dict[str, Any]) -> str:
    if method == "tools/call":
        return str(result["content"][0]["text"])
    return str(result["messages"][0]["content"]["text"])


@pytest.mark.parametrize("method", ["tools/call", "prompts/get"])
def test_a_caller_cannot_resume_another_callers_request_state(
    gateway: gwkit.Proc, method: str
) -> None:
    first = _round(gateway, ALICE, method)["result"]
    assert first["resultType"] == "input_required", first
    # her first answer now travels in the state of the second round
    second = _round(
        gateway,
        ALICE,
        method,
        inputResponses=_answer("alice-word", first),
        requestState=first["requestState"],
    )["result"]
    assert second["resultType"] == "input_required", second
    state = second["requestState"]
    assert "alice-word" not in state
    made_up = state[:-6] + ("AAAAAA" if not state.endswith("AAAAAA") else "BBBBBB")
    bobs = _answer("bob", second)
    foreign = _round(gateway, BOB, method, inputResponses=bobs, requestState=state)
    unknown = _round(gateway, BOB, method, inputResponses=bobs, requestState=made_up)
    assert "alice-word" not in str(foreign)
    assert "result" not in foreign, foreign
    assert foreign["error"] == unknown["error"]
    theirs = _answer("again", second)
    done = _round(gateway, ALICE, method, inputResponses=theirs, requestState=state)["result"]
    assert _text_of(method, done) == "alice-word again"


def _read(gateway: gwkit.Proc, uri: str) -> str:
    reply = gwkit.call(gateway.url, "resources/read", {"uri": uri}, token=ALICE)
    return str(reply.result["contents"][0]["text"])


def _listed(gateway: gwkit.Proc) -> list[str]:
    reply = gwkit.call(gateway.url, "resources/list", {}, token=ALICE)
    return [str(r["uri"]) for r in reply.result["resources"]]


def _claim_then_sync(gateway: gwkit.Proc, uri: str, marker: str) -> None:
    """beta claims ``uri``, then ``marker`` (its own): once the gateway lists the marker,
    it has seen the claim."""
    for each in (uri, marker):
        assert _call(gateway, ALICE, "b_claim", uri=each).text() == f"claimed {each}"
    eventually(lambda: marker in _listed(gateway), 15, f"the gateway lists {marker}")


def test_an_upstream_that_adds_another_upstreams_uri_after_start_does_not_take_it_over(
    gateway: gwkit.Proc,
) -> None:
    assert _read(gateway, "secret://alpha") == "vault of alpha"
    _claim_then_sync(gateway, "secret://alpha", "secret://beta-own")
    assert _read(gateway, "secret://alpha") == "vault of alpha"
    assert _read(gateway, "secret://beta-own") == "beta serves secret://beta-own"
    assert _listed(gateway).count("secret://alpha") == 1
    assert "secret://alpha" in gateway.tail(200)  # the refused claim is logged


def test_ui_views_come_only_from_the_upstream_whose_tool_names_them(
    gateway: gwkit.Proc,
) -> None:
    view = "ui://alpha/view"
    assert "view of alpha" in _read(gateway, view)
    _claim_then_sync(gateway, view, "ui://beta/extra")
    assert "view of alpha" in _read(gateway, view)
    # a view no tool names is served by nobody
    reply = gwkit.call(gateway.url, "resources/read", {"uri": "ui://beta/extra"}, token=ALICE)
    assert "error" in reply.body, reply.body


def test_a_caller_cannot_use_another_callers_legacy_session(gateway: gwkit.Proc) -> None:
    hers = gwkit.LegacySession(gateway.url, token=ALICE)
    unknown = gwkit.LegacySession(gateway.url, token=BOB)
    try:
        assert hers.initialize().status == 200
        assert hers.request("tools/list").status == 200
        his = gwkit.LegacySession(gateway.url, token=BOB)
        his.session_id = hers.session_id
        unknown.session_id = "no-such-session"
        foreign, missing = his.request("tools/list"), unknown.request("tools/list")
        his.close()
        assert foreign.status == missing.status == 404
        assert foreign.body["error"] == missing.body["error"]
    finally:
        hers.close()
        unknown.close()


# ---------------------------------------------------------------- the handle scan
_SHORTEST = "k_" + "A" * 32  # a one-letter kind: the shortest handle there is


@pytest.mark.anyio
async def test_handles_are_found_wherever_json_holds_a_string() -> None:
    """The scan's cheap tests (a ``_`` and a handle's length before the regex, exact JSON
    types first) skip nothing a handle can travel in: nested objects and arrays of the
    arguments, text blocks and structured content, the shortest handle, a subclass of
    ``str``; and a string one character short of a handle is none."""
    import os

    from mcpkit.gateway.binding import Bindings
    from mcpkit.protocol.sealing import Keyring
    from mcpkit.state.memory import MemoryBackend

    class Text(str):
        pass

    bindings = Bindings(Keyring([os.urandom(32)]), MemoryBackend())
    deep = "file_" + "b" * 32
    structured = "blob_" + "c-" * 16
    result = {
        "content": [
            {"type": "image", "data": "x_" + "z" * 40, "mimeType": "image/png"},
            {"type": "text", "text": f"made {_SHORTEST}."},
        ],
        "structuredContent": {"items": [{"n": 1, "ok": True, "h": [None, 2.5, structured]}]},
    }
    await bindings.record_handles("alice", result)
    arguments = {
        "a": [{"b": {"c": [deep]}}],
        "short": "k_" + "A" * 31,
        "sub": Text(_SHORTEST),
        "n": 3,
        "flag": False,
        "none": None,
    }
    await bindings.record_handles("alice", {"content": [{"type": "text", "text": deep}]})
    swaps = await bindings.foreign_handles("bob", arguments)
    assert set(swaps) == {_SHORTEST, deep}
    assert set(await bindings.foreign_handles("bob", [structured, "x_" + "z" * 40])) == {structured}
    assert await bindings.foreign_handles("alice", arguments) == {}
