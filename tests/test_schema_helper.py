"""Tests for tests/support/schema.py: it must accept valid messages and reject invalid ones.

A validator that accepts everything would make every schema-backed test meaningless, so each
revision gets hand-written messages that must pass and messages that must fail, and the
method tables are cross-checked against the schemas' own request/notification unions.
"""

from __future__ import annotations

from typing import Any

import pytest

from support.schema import (
    INPUT_REQUIRED_METHODS,
    LEGACY,
    MODERN,
    NOTIFICATIONS,
    RESULTS,
    REVISIONS,
    SERVER_REQUESTS,
    definitions,
    load_schema,
    validate_definition,
    validate_outgoing,
)

TEXT = {"type": "text", "text": "hello"}


def _res(result: dict[str, Any], id_: int | str = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _err(code: Any, message: str = "boom", **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message, **extra}}


def _note(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def _methods(revision: str, union: str) -> set[str]:
    """Method names of the request/notification definitions listed in an anyOf union."""
    defs = definitions(revision)
    if union not in defs:
        return set()
    names = (ref["$ref"].rsplit("/", 1)[-1] for ref in defs[union]["anyOf"])
    return {defs[name]["properties"]["method"]["const"] for name in names}


# --- the schemas and the tables agree ---


@pytest.mark.parametrize("revision", REVISIONS)
def test_schema_is_draft_2020_12_with_defs(revision: str) -> None:
    schema = load_schema(revision)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "$defs" in schema and "definitions" not in schema


@pytest.mark.parametrize("revision", REVISIONS)
def test_tables_cover_the_schema_unions(revision: str) -> None:
    assert set(RESULTS[revision]) == _methods(revision, "ClientRequest")
    assert set(NOTIFICATIONS[revision]) == _methods(revision, "ServerNotification")
    assert set(SERVER_REQUESTS[revision]) == _methods(revision, "ServerRequest")
    defs = definitions(revision)
    named = [*RESULTS[revision].values(), *NOTIFICATIONS[revision].values()]
    named += SERVER_REQUESTS[revision].values()
    assert [name for name in named if name not in defs] == []


def test_input_required_methods_match_the_response_definitions() -> None:
    defs = definitions(MODERN)
    allowed = set()
    for method, result_def in RESULTS[MODERN].items():
        response = defs.get(f"{result_def}Response")
        branches = response["properties"]["result"].get("anyOf", []) if response else []
        if {"$ref": "#/$defs/InputRequiredResult"} in branches:
            allowed.add(method)
    assert allowed == INPUT_REQUIRED_METHODS


# --- validate_definition ---


def test_validate_definition_accepts_and_rejects() -> None:
    validate_definition(LEGACY, "TextContent", TEXT)
    with pytest.raises(AssertionError, match=r"'text' is a required property"):
        validate_definition(LEGACY, "TextContent", {"type": "text"})


def test_validate_definition_unknown_name_is_an_error() -> None:
    with pytest.raises(AssertionError, match="no definition 'NoSuchThing'"):
        validate_definition(MODERN, "NoSuchThing", {})


def test_byte_format_is_enforced() -> None:
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    validate_definition(MODERN, "ImageContent", image)
    with pytest.raises(AssertionError, match="is not a 'byte'"):
        validate_definition(MODERN, "ImageContent", {**image, "data": "not base64!"})


# --- validate_outgoing, 2025-11-25 ---

_TASK = {
    "taskId": "t1",
    "status": "working",
    "createdAt": "2025-11-25T00:00:00Z",
    "lastUpdatedAt": "2025-11-25T00:00:00Z",
    "ttl": None,
}
_SERVER_INFO = {"name": "fixture", "version": "1.0"}

LEGACY_VALID: list[tuple[str, dict[str, Any], str | None]] = [
    (
        "initialize",
        _res({"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": _SERVER_INFO}),
        "initialize",
    ),
    ("ping", _res({}), "ping"),
    ("call", _res({"content": [TEXT], "isError": False}), "tools/call"),
    ("call-task", _res({"task": _TASK}), "tools/call"),
    ("set-level", _res({}), "logging/setLevel"),
    ("progress", _note("notifications/progress", {"progressToken": "p", "progress": 50}), None),
    ("log", _note("notifications/message", {"level": "info", "data": {"n": 1}}), None),
    ("tools-changed", _note("notifications/tools/list_changed"), None),
    ("ping-request", {"jsonrpc": "2.0", "id": "s1", "method": "ping"}, None),
    ("roots-request", {"jsonrpc": "2.0", "id": 7, "method": "roots/list"}, None),
    (
        "elicit-request",
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "elicitation/create",
            "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}},
        },
        None,
    ),
    (
        "sampling-request",
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": TEXT}], "maxTokens": 10},
        },
        None,
    ),
    ("method-not-found", _err(-32601, "Method not found"), None),
    (
        "url-elicitation-required",
        _err(-32042, data={"elicitations": []}),
        None,
    ),
]

LEGACY_INVALID: list[tuple[str, dict[str, Any], str | None, str]] = [
    (
        "initialize-no-serverInfo",
        _res({"protocolVersion": LEGACY, "capabilities": {}}),
        "initialize",
        "'serverInfo' is a required property",
    ),
    (
        "call-text-without-text",
        _res({"content": [{"type": "text"}]}),
        "tools/call",
        r"\$\.content\[0\]",
    ),
    ("call-no-content", _res({"isError": True}), "tools/call", "'content' is a required"),
    ("bad-jsonrpc", {"jsonrpc": "1.0", "id": 1, "result": {}}, "ping", "'2.0' was expected"),
    ("no-request-method", _res({}), None, "needs request_method"),
    ("unknown-result-method", _res({}), "server/discover", "no result definition"),
    (
        "progress-no-token",
        _note("notifications/progress", {"progress": 1}),
        None,
        "'progressToken' is a required",
    ),
    ("log-bad-level", _note("notifications/message", {"level": "loud", "data": 1}), None, "loud"),
    ("unknown-notification", _note("notifications/whatever"), None, "no schema definition"),
    (
        "elicit-without-id",
        _note("elicitation/create", {"message": "x", "requestedSchema": {"type": "object"}}),
        None,
        "server notification 'elicitation/create'",
    ),
    ("error-string-code", _err("-32601"), None, "is not of type 'integer'"),
    ("url-elicitation-no-data", _err(-32042), None, "'data' is a required"),
    (
        "result-and-error",
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
        "ping",
        "exactly one of",
    ),
]


@pytest.mark.parametrize(
    ("message", "method"), [c[1:] for c in LEGACY_VALID], ids=[c[0] for c in LEGACY_VALID]
)
def test_legacy_valid(message: dict[str, Any], method: str | None) -> None:
    validate_outgoing(LEGACY, message, request_method=method)


@pytest.mark.parametrize(
    ("message", "method", "match"),
    [c[1:] for c in LEGACY_INVALID],
    ids=[c[0] for c in LEGACY_INVALID],
)
def test_legacy_invalid(message: dict[str, Any], method: str | None, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        validate_outgoing(LEGACY, message, request_method=method)


# --- validate_outgoing, 2026-07-28 ---

_CACHE = {"ttlMs": 0, "cacheScope": "public"}
_ELICIT = {
    "method": "elicitation/create",
    "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}},
}

MODERN_VALID: list[tuple[str, dict[str, Any], str | None]] = [
    (
        "discover",
        _res(
            {
                "resultType": "complete",
                "supportedVersions": [MODERN, LEGACY],
                "capabilities": {"tools": {}},
                **_CACHE,
            }
        ),
        "server/discover",
    ),
    ("list-tools", _res({"resultType": "complete", "tools": [], **_CACHE}), "tools/list"),
    ("call", _res({"resultType": "complete", "content": [TEXT]}), "tools/call"),
    (
        "call-input-required",
        _res({"resultType": "input_required", "inputRequests": {"who": _ELICIT}}),
        "tools/call",
    ),
    (
        "listen-closed",
        _res({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 4}}, 4),
        "subscriptions/listen",
    ),
    (
        "acknowledged",
        _note(
            "notifications/subscriptions/acknowledged",
            {
                "notifications": {"toolsListChanged": True},
                "_meta": {"io.modelcontextprotocol/subscriptionId": 4},
            },
        ),
        None,
    ),
    ("progress", _note("notifications/progress", {"progressToken": 1, "progress": 0.5}), None),
    ("invalid-params", _err(-32602, "Unknown tool: nope"), None),
    (
        "missing-capability",
        _err(-32021, "needs sampling", data={"requiredCapabilities": {"sampling": {}}}),
        None,
    ),
    ("resource-not-found", _err(-32002, "Resource not found"), None),
    ("parse-error-without-id", {"jsonrpc": "2.0", "error": {"code": -32700, "message": "x"}}, None),
]

MODERN_INVALID: list[tuple[str, dict[str, Any], str | None, str]] = [
    (
        "call-no-resultType",
        _res({"content": [TEXT]}),
        "tools/call",
        "'resultType' is a required",
    ),
    (
        "list-tools-no-ttl",
        _res({"resultType": "complete", "tools": [], "cacheScope": "public"}),
        "tools/list",
        "'ttlMs' is a required",
    ),
    (
        "discover-bad-cacheScope",
        _res(
            {
                "resultType": "complete",
                "supportedVersions": [MODERN],
                "capabilities": {},
                "ttlMs": 0,
                "cacheScope": "shared",
            }
        ),
        "server/discover",
        "'shared' is not one of",
    ),
    (
        "input-required-on-list",
        _res({"resultType": "input_required", "requestState": "s"}),
        "tools/list",
        "may not answer with input_required",
    ),
    (
        "input-request-unknown-method",
        _res({"resultType": "input_required", "inputRequests": {"x": {"method": "ping"}}}),
        "tools/call",
        r"\$\.inputRequests\.x",
    ),
    (
        "listen-closed-no-subscription-id",
        _res({"resultType": "complete"}),
        "subscriptions/listen",
        "'_meta' is a required",
    ),
    ("ping-was-removed", _res({"resultType": "complete"}), "ping", "no result definition"),
    ("initialize-was-removed", _res({}), "initialize", "no result definition"),
    (
        "server-request-was-removed",
        {"jsonrpc": "2.0", "id": 1, "method": "roots/list"},
        None,
        "server->client request 'roots/list'",
    ),
    ("missing-capability-no-data", _err(-32021), None, "'data' is a required"),
    (
        "parse-error-no-message",
        {"jsonrpc": "2.0", "error": {"code": -32700}},
        None,
        "'message' is a required",
    ),
    # The schema's RequestId is string | integer: an error response for an unreadable request
    # must omit "id" rather than send JSON-RPC 2.0's "id": null.
    (
        "error-id-null",
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        None,
        r"None is not of type 'string', 'integer'",
    ),
    ("not-an-object", [], None, "must be an object"),  # type: ignore[list-item]
]


@pytest.mark.parametrize(
    ("message", "method"), [c[1:] for c in MODERN_VALID], ids=[c[0] for c in MODERN_VALID]
)
def test_modern_valid(message: dict[str, Any], method: str | None) -> None:
    validate_outgoing(MODERN, message, request_method=method)


@pytest.mark.parametrize(
    ("message", "method", "match"),
    [c[1:] for c in MODERN_INVALID],
    ids=[c[0] for c in MODERN_INVALID],
)
def test_modern_invalid(message: dict[str, Any], method: str | None, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        validate_outgoing(MODERN, message, request_method=method)


def test_unknown_revision_is_an_error() -> None:
    with pytest.raises(AssertionError, match="unknown revision"):
        validate_outgoing("2099-01-01", _res({}), request_method="ping")
