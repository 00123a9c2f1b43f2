"""Input requests on both eras, in-process: MRTR (input_required + sealed requestState) on
2026-07-28, real server->client requests through the Exchange on 2025-11-25; progress and
logging notifications; the legacy session object."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mcpkit import Context, McpError, Server
from mcpkit.protocol.sealing import Keyring
from mcpkit.runtime.exchange import Exchange
from mcpkit.runtime.legacy_session import LegacySession
from mcpkit.types import jsonrpc
from support.inproc import CollectingExchange, call, call_error, legacy, modern, text_of
from support.schema import LEGACY, MODERN, validate_outgoing

pytestmark = pytest.mark.anyio

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ELICIT: dict[str, Any] = {"elicitation": {}}
ALL_CAPS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


def make_server(keyring: Keyring | None = None) -> Server:
    server = Server("mrtr", keyring=keyring or Keyring.from_secrets(["mrtr-test-key"]))

    @server.tool
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME_SCHEMA, key="name")
        return f"Hello, {(answer.get('content') or {}).get('name')}!"

    @server.tool
    async def two_steps(ctx: Context) -> str:
        ctx.state["rounds"] = ctx.state.get("rounds", 0) + 1
        first = await ctx.elicit("Step 1", NAME_SCHEMA, key="step1")
        second = await ctx.elicit("Step 2", NAME_SCHEMA, key="step2")
        names = [(a.get("content") or {}).get("name") for a in (first, second)]
        return f"{names[0]} then {names[1]} after {ctx.state['rounds']} rounds"

    @server.tool
    async def sample(ctx: Context) -> str:
        result = await ctx.sample("Capital of France?", max_tokens=20, key="q")
        return f"model: {result['content']['text']}"

    @server.tool
    async def roots(ctx: Context) -> str:
        found = await ctx.list_roots(key="r")
        return ",".join(r["uri"] for r in found)

    @server.tool
    async def url_consent(ctx: Context) -> str:
        answer = await ctx.elicit_url("Sign in", "https://example.com/consent", key="u")
        return str(answer.action)

    @server.tool
    async def everything(ctx: Context) -> str:
        answers = await ctx.ask(
            {
                "e": {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": "Name?", "requestedSchema": NAME_SCHEMA},
                },
                "s": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                        "maxTokens": 5,
                    },
                },
                "r": {"method": "roots/list", "params": {}},
            }
        )
        return ",".join(sorted(answers))

    @server.prompt
    async def guided(ctx: Context) -> str:
        answer = await ctx.elicit("Context?", NAME_SCHEMA, key="c")
        return f"Use {(answer.get('content') or {}).get('name')}"

    @server.resource("test://secret")
    async def secret(ctx: Context) -> str:
        answer = await ctx.elicit("Really read it?", NAME_SCHEMA, key="ok")
        return f"secret for {(answer.get('content') or {}).get('name')}"

    return server


def accept(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


async def first_round(
    server: Server, name: str, caps: dict[str, Any] = ELICIT, **kw: Any
) -> dict[str, Any]:
    result = await call(server, "tools/call", {"name": name}, modern(caps), **kw)
    assert result["resultType"] == "input_required", result
    assert isinstance(result["requestState"], str) and result["requestState"]
    assert "content" not in result
    return result


# --------------------------------------------------------------------------- modern MRTR


async def test_input_required_then_complete() -> None:
    server = make_server()
    first = await first_round(server, "ask_name")
    assert list(first["inputRequests"]) == ["name"]
    request = first["inputRequests"]["name"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Your name?"
    assert request["params"]["requestedSchema"] == NAME_SCHEMA
    validate_outgoing(MODERN, jsonrpc.result(1, first), request_method="tools/call")
    done = await call(
        server,
        "tools/call",
        {
            "name": "ask_name",
            "inputResponses": {"name": accept("Ada")},
            "requestState": first["requestState"],
        },
        modern(ELICIT),
    )
    assert done["resultType"] == "complete"
    assert text_of(done) == "Hello, Ada!"


async def test_retry_without_request_state_still_works_for_one_round() -> None:
    server = make_server()
    done = await call(
        server,
        "tools/call",
        {"name": "ask_name", "inputResponses": {"name": accept("Bo")}},
        modern(ELICIT),
    )
    assert text_of(done) == "Hello, Bo!"


async def test_multi_round_carries_answers_and_handler_state() -> None:
    server = make_server()
    first = await first_round(server, "two_steps")
    assert list(first["inputRequests"]) == ["step1"]
    second = await call(
        server,
        "tools/call",
        {
            "name": "two_steps",
            "inputResponses": {"step1": accept("A")},
            "requestState": first["requestState"],
        },
        modern(ELICIT),
    )
    assert second["resultType"] == "input_required"
    assert list(second["inputRequests"]) == ["step2"]
    assert second["requestState"] != first["requestState"]
    done = await call(
        server,
        "tools/call",
        {
            "name": "two_steps",
            "inputResponses": {"step2": accept("B")},
            "requestState": second["requestState"],
        },
        modern(ELICIT),
    )
    assert text_of(done) == "A then B after 3 rounds"


async def test_several_input_requests_in_one_round() -> None:
    server = make_server()
    first = await first_round(server, "everything", ALL_CAPS)
    assert set(first["inputRequests"]) == {"e", "s", "r"}
    assert first["inputRequests"]["s"]["method"] == "sampling/createMessage"
    assert first["inputRequests"]["r"] == {"method": "roots/list", "params": {}}
    answers = {
        "e": accept("x"),
        "s": {"role": "assistant", "content": {"type": "text", "text": "hey"}, "model": "m"},
        "r": {"roots": [{"uri": "file:///tmp"}]},
    }
    partial = await call(
        server,
        "tools/call",
        {
            "name": "everything",
            "inputResponses": {"e": answers["e"]},
            "requestState": first["requestState"],
        },
        modern(ALL_CAPS),
    )
    # a partial answer is not an error: the rest is asked again
    assert partial["resultType"] == "input_required"
    assert set(partial["inputRequests"]) == {"s", "r"}
    done = await call(
        server, "tools/call", {"name": "everything", "inputResponses": answers}, modern(ALL_CAPS)
    )
    assert text_of(done) == "e,r,s"


async def test_sampling_and_roots_rounds() -> None:
    server = make_server()
    caps: dict[str, Any] = {"sampling": {}, "roots": {}}
    first = await first_round(server, "sample", caps)
    params = first["inputRequests"]["q"]["params"]
    assert params["maxTokens"] == 20
    assert params["messages"][0]["content"]["text"] == "Capital of France?"
    done = await call(
        server,
        "tools/call",
        {
            "name": "sample",
            "inputResponses": {
                "q": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "Paris"},
                    "model": "m",
                }
            },
            "requestState": first["requestState"],
        },
        modern(caps),
    )
    assert text_of(done) == "model: Paris"
    await first_round(server, "roots", caps)
    done = await call(
        server,
        "tools/call",
        {
            "name": "roots",
            "inputResponses": {"r": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}},
        },
        modern(caps),
    )
    assert text_of(done) == "file:///a,file:///b"


async def test_prompts_and_resources_can_ask_too() -> None:
    server = make_server()
    first = await call(server, "prompts/get", {"name": "guided"}, modern(ELICIT))
    assert first["resultType"] == "input_required"
    done = await call(
        server,
        "prompts/get",
        {
            "name": "guided",
            "inputResponses": {"c": accept("ctx")},
            "requestState": first["requestState"],
        },
        modern(ELICIT),
    )
    assert done["messages"][0]["content"]["text"] == "Use ctx"
    first = await call(server, "resources/read", {"uri": "test://secret"}, modern(ELICIT))
    assert first["resultType"] == "input_required"
    assert "ttlMs" not in first  # MRTR results are not cacheable
    done = await call(
        server,
        "resources/read",
        {
            "uri": "test://secret",
            "inputResponses": {"ok": accept("me")},
            "requestState": first["requestState"],
        },
        modern(ELICIT),
    )
    assert done["contents"][0]["text"] == "secret for me"
    assert done["ttlMs"] >= 0


def _tamper(token: str) -> str:
    head, kid, blob = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4)))
    raw[-1] ^= 0x80
    return f"{head}.{kid}." + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


async def test_tampered_request_state_is_invalid_params() -> None:
    server = make_server()
    first = await first_round(server, "two_steps")
    for bad in (_tamper(first["requestState"]), "forged", first["requestState"] + "x", 42):
        await call_error(
            server,
            "tools/call",
            {"name": "two_steps", "inputResponses": {"step1": accept("A")}, "requestState": bad},
            modern(ELICIT),
            code=-32602,
        )


async def test_request_state_is_bound_to_tool_principal_and_key() -> None:
    server = make_server()
    first = await first_round(server, "two_steps")
    state = first["requestState"]
    # another tool
    await call_error(
        server,
        "tools/call",
        {"name": "ask_name", "requestState": state},
        modern(ELICIT),
        code=-32602,
    )
    # another principal
    mine = await server.dispatch(
        jsonrpc.request(1, "tools/call", {"name": "two_steps"}),
        modern(ELICIT),
        CollectingExchange(),
        principal="alice",
    )
    with pytest.raises(McpError) as info:
        await server.dispatch(
            jsonrpc.request(
                2, "tools/call", {"name": "two_steps", "requestState": mine["requestState"]}
            ),
            modern(ELICIT),
            CollectingExchange(),
            principal="bob",
        )
    assert info.value.code == -32602
    # another server key
    other = make_server(Keyring.from_secrets(["another-key"]))
    await call_error(
        other,
        "tools/call",
        {"name": "two_steps", "requestState": state},
        modern(ELICIT),
        code=-32602,
    )
    # a replica sharing the key accepts it
    replica = make_server(Keyring.from_secrets(["mrtr-test-key"]))
    second = await call(
        replica,
        "tools/call",
        {"name": "two_steps", "requestState": state, "inputResponses": {"step1": accept("A")}},
        modern(ELICIT),
    )
    assert list(second["inputRequests"]) == ["step2"]


@pytest.mark.parametrize("responses", [[1], "yes", {"name": "not-an-object"}])
async def test_malformed_input_responses_are_invalid_params(responses: Any) -> None:
    await call_error(
        make_server(),
        "tools/call",
        {"name": "ask_name", "inputResponses": responses},
        modern(ELICIT),
        code=-32602,
    )


@pytest.mark.parametrize(
    ("tool", "caps", "required"),
    [
        ("ask_name", {}, {"elicitation": {"form": {}}}),
        ("ask_name", {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
        ("url_consent", {"elicitation": {}}, {"elicitation": {"url": {}}}),
        ("sample", {"elicitation": {}}, {"sampling": {}}),
        ("roots", {"sampling": {}}, {"roots": {}}),
        ("everything", {"elicitation": {}, "sampling": {}}, {"roots": {}}),
    ],
)
async def test_missing_client_capability_is_32021(
    tool: str, caps: dict[str, Any], required: dict[str, Any]
) -> None:
    err = await call_error(make_server(), "tools/call", {"name": tool}, modern(caps), code=-32021)
    assert err.data == {"requiredCapabilities": required}
    assert err.http_status == 400


async def test_url_elicitation_when_declared() -> None:
    server = make_server()
    caps: dict[str, Any] = {"elicitation": {"url": {}}}
    first = await first_round(server, "url_consent", caps)
    params = first["inputRequests"]["u"]["params"]
    assert params == {"mode": "url", "message": "Sign in", "url": "https://example.com/consent"}
    done = await call(
        server,
        "tools/call",
        {"name": "url_consent", "inputResponses": {"u": {"action": "accept"}}},
        modern(caps),
    )
    assert text_of(done) == "accept"


# --------------------------------------------------------------------------- legacy requests


class AnsweringExchange(Exchange):
    """A client that answers server->client requests and records them (schema-checked)."""

    __slots__ = ("answers", "notifications", "requests")

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        message = jsonrpc.request(len(self.requests) + 1, method, params)
        validate_outgoing(LEGACY, message)
        self.requests.append(message)
        return self.answers[method]

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        message = jsonrpc.notification(method, params)
        validate_outgoing(LEGACY, message)
        self.notifications.append(message)


LEGACY_ANSWERS = {
    "elicitation/create": accept("Legacy"),
    "sampling/createMessage": {
        "role": "assistant",
        "content": {"type": "text", "text": "Rome"},
        "model": "m",
    },
    "roots/list": {"roots": [{"uri": "file:///r"}]},
}


@pytest.mark.parametrize(
    ("tool", "method", "text"),
    [
        ("ask_name", "elicitation/create", "Hello, Legacy!"),
        ("sample", "sampling/createMessage", "model: Rome"),
        ("roots", "roots/list", "file:///r"),
    ],
)
async def test_legacy_era_sends_a_real_request(tool: str, method: str, text: str) -> None:
    exchange = AnsweringExchange(LEGACY_ANSWERS)
    result = await call(make_server(), "tools/call", {"name": tool}, legacy(ALL_CAPS), exchange)
    assert text_of(result) == text
    assert [r["method"] for r in exchange.requests] == [method]
    assert "resultType" not in result


async def test_legacy_multi_step_sends_one_request_per_ask() -> None:
    exchange = AnsweringExchange(LEGACY_ANSWERS)
    result = await call(
        make_server(), "tools/call", {"name": "two_steps"}, legacy(ELICIT), exchange
    )
    assert text_of(result) == "Legacy then Legacy after 1 rounds"
    assert [r["params"]["message"] for r in exchange.requests] == ["Step 1", "Step 2"]
    assert all(r["params"]["mode"] == "form" for r in exchange.requests)


async def test_legacy_elicitation_before_2025_11_25_has_no_mode() -> None:
    exchange = AnsweringExchange(LEGACY_ANSWERS)
    await call(
        make_server(),
        "tools/call",
        {"name": "ask_name"},
        legacy(ELICIT, version="2025-06-18"),
        exchange,
    )
    assert "mode" not in exchange.requests[0]["params"]


async def test_legacy_missing_capability_is_refused_before_sending() -> None:
    exchange = AnsweringExchange(LEGACY_ANSWERS)
    await call_error(
        make_server(), "tools/call", {"name": "sample"}, legacy({}), exchange, code=-32021
    )
    assert exchange.requests == []


# --------------------------------------------------------------------------- notifications


def notifying_server() -> Server:
    server = Server("notes")

    @server.tool
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 3, "one")
        await ctx.report_progress(1, 3, "repeat: dropped")
        await ctx.report_progress(0.5, 3, "backwards: dropped")
        await ctx.report_progress(2.5, 3)
        await ctx.debug("debug line")
        await ctx.info({"structured": True}, logger="worker")
        await ctx.warning("careful")
        await ctx.error("bad")
        return "done"

    return server


async def test_progress_only_with_a_token_and_always_increasing() -> None:
    exchange = CollectingExchange()
    await call(
        notifying_server(), "tools/call", {"name": "work"}, modern(progress_token="tok-1"), exchange
    )
    progress = [
        n["params"] for n in exchange.notifications if n["method"] == "notifications/progress"
    ]
    assert progress == [
        {"progressToken": "tok-1", "progress": 1, "total": 3, "message": "one"},
        {"progressToken": "tok-1", "progress": 2.5, "total": 3},
    ]
    for note in exchange.notifications:
        validate_outgoing(MODERN, note)
    silent = CollectingExchange()
    await call(notifying_server(), "tools/call", {"name": "work"}, modern(), silent)
    assert silent.notifications == []  # no token, no log level: nothing at all


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("debug", ["debug", "info", "warning", "error"]),
        ("info", ["info", "warning", "error"]),
        ("warning", ["warning", "error"]),
        ("emergency", []),
    ],
)
async def test_modern_logging_honours_the_request_level(level: str, expected: list[str]) -> None:
    exchange = CollectingExchange()
    await call(
        notifying_server(), "tools/call", {"name": "work"}, modern(log_level=level), exchange
    )
    logs = [n["params"] for n in exchange.notifications if n["method"] == "notifications/message"]
    assert [entry["level"] for entry in logs] == expected
    for note in exchange.notifications:
        validate_outgoing(MODERN, note)
    if "info" in expected:
        info = next(entry for entry in logs if entry["level"] == "info")
        assert info == {"level": "info", "data": {"structured": True}, "logger": "worker"}


async def test_legacy_session_flow_with_set_level() -> None:
    server = notifying_server()
    session = LegacySession()
    exchange = AnsweringExchange({})

    async def request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = jsonrpc.request(request_id, method, params)
        result = await session.handle_request(server, message, exchange)
        validate_outgoing(LEGACY, jsonrpc.result(request_id, result), request_method=method)
        return result

    with pytest.raises(McpError) as info:
        await request(1, "tools/list", {})
    assert info.value.code == -32600  # not initialized
    init = await request(
        2,
        "initialize",
        {
            "protocolVersion": "2026-07-28",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    )
    assert init["protocolVersion"] == "2025-11-25"
    assert init["serverInfo"]["name"] == "notes"
    session.on_notification(jsonrpc.notification("notifications/initialized"))
    with pytest.raises(McpError) as info:
        await request(3, "initialize", {"protocolVersion": "2025-11-25"})
    assert info.value.code == -32600
    await request(4, "tools/call", {"name": "work"})
    assert exchange.notifications == []  # no level set yet: nothing is logged
    with pytest.raises(McpError) as info:
        await request(5, "logging/setLevel", {"level": "loud"})
    assert info.value.code == -32602
    assert await request(6, "logging/setLevel", {"level": "warning"}) == {}
    await request(7, "tools/call", {"name": "work", "_meta": {"progressToken": 9}})
    methods = [(n["method"], n["params"].get("level")) for n in exchange.notifications]
    assert methods == [
        ("notifications/progress", None),
        ("notifications/progress", None),
        ("notifications/message", "warning"),
        ("notifications/message", "error"),
    ]
    assert await request(8, "ping", {}) == {}
    session.close()
    with pytest.raises(McpError) as info:
        await request(9, "ping", {})
    assert info.value.code == -32600
