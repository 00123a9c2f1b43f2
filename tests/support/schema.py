"""Validate messages against the official MCP JSON Schemas kept in ``tests/spec/``.

The schemas are the spec's own source of truth, so tests that check what mcpkit puts on the
wire against them catch drift that hand-written expectations would miss. Validators are built
once per (revision, definition) and cached: compiling the 150-definition schema for every
message would dominate test time.

Two entry points:

* :func:`validate_definition` checks an instance against ``#/$defs/<definition>``.
* :func:`validate_outgoing` checks one JSON-RPC message a *server* emitted, choosing the
  definition from the message itself (and from the request's method for results). A method
  this module does not know raises ``AssertionError`` instead of passing silently, so gaps in
  the tables below show up as test failures.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema import FormatChecker
from jsonschema.exceptions import ValidationError, relevance
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_DIR = Path(__file__).resolve().parent.parent / "spec"
REVISIONS = ("2025-11-25", "2026-07-28")
LEGACY = "2025-11-25"
MODERN = "2026-07-28"

# --- method -> definition tables (names checked against the schemas in test_schema_helper) ---

#: Result definition for the response to each client->server request, per revision.
RESULTS: dict[str, dict[str, str]] = {
    LEGACY: {
        "initialize": "InitializeResult",
        "ping": "EmptyResult",
        "tools/list": "ListToolsResult",
        "tools/call": "CallToolResult",
        "prompts/list": "ListPromptsResult",
        "prompts/get": "GetPromptResult",
        "resources/list": "ListResourcesResult",
        "resources/templates/list": "ListResourceTemplatesResult",
        "resources/read": "ReadResourceResult",
        "resources/subscribe": "EmptyResult",
        "resources/unsubscribe": "EmptyResult",
        "logging/setLevel": "EmptyResult",
        "completion/complete": "CompleteResult",
        "tasks/get": "GetTaskResult",
        "tasks/result": "GetTaskPayloadResult",
        "tasks/cancel": "CancelTaskResult",
        "tasks/list": "ListTasksResult",
    },
    MODERN: {
        "server/discover": "DiscoverResult",
        "tools/list": "ListToolsResult",
        "tools/call": "CallToolResult",
        "prompts/list": "ListPromptsResult",
        "prompts/get": "GetPromptResult",
        "resources/list": "ListResourcesResult",
        "resources/templates/list": "ListResourceTemplatesResult",
        "resources/read": "ReadResourceResult",
        "subscriptions/listen": "SubscriptionsListenResult",
        "completion/complete": "CompleteResult",
    },
}

#: 2026-07-28 methods whose response may be an InputRequiredResult (multi-round-trip).
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})

_COMMON_NOTIFICATIONS = {
    "notifications/cancelled": "CancelledNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
}

#: Definition for each notification a server may send, per revision.
NOTIFICATIONS: dict[str, dict[str, str]] = {
    LEGACY: {
        **_COMMON_NOTIFICATIONS,
        "notifications/tasks/status": "TaskStatusNotification",
        "notifications/elicitation/complete": "ElicitationCompleteNotification",
    },
    MODERN: {
        **_COMMON_NOTIFICATIONS,
        "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    },
}

#: Server->client JSON-RPC requests. 2026-07-28 has none: input requests travel inside an
#: InputRequiredResult instead.
SERVER_REQUESTS: dict[str, dict[str, str]] = {
    LEGACY: {
        "ping": "PingRequest",
        "sampling/createMessage": "CreateMessageRequest",
        "roots/list": "ListRootsRequest",
        "elicitation/create": "ElicitRequest",
        "tasks/get": "GetTaskRequest",
        "tasks/result": "GetTaskPayloadRequest",
        "tasks/cancel": "CancelTaskRequest",
        "tasks/list": "ListTasksRequest",
    },
    MODERN: {},
}

#: Error codes with a dedicated definition. "error" = the definition describes the ``error``
#: member; "message" = it describes the whole error response.
ERROR_CODES: dict[str, dict[int, tuple[str, str]]] = {
    LEGACY: {-32042: ("URLElicitationRequiredError", "message")},
    MODERN: {
        -32700: ("ParseError", "error"),
        -32600: ("InvalidRequestError", "error"),
        -32601: ("MethodNotFoundError", "error"),
        -32602: ("InvalidParamsError", "error"),
        -32603: ("InternalError", "error"),
        -32020: ("HeaderMismatchError", "message"),
        -32021: ("MissingRequiredClientCapabilityError", "message"),
        -32022: ("UnsupportedProtocolVersionError", "message"),
    },
}

# --- schema loading and validator cache ---

# The spec uses "format" as an annotation; we assert the two formats that matter on the wire
# (base64 payloads, absolute URIs). jsonschema's stock "uri" check needs an optional package,
# so it would silently pass where that package is missing; these checks are our own.
_FORMATS = FormatChecker(formats=())
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:\S*$")


@_FORMATS.checks("byte", raises=(binascii.Error, ValueError))  # type: ignore[untyped-decorator]
def _is_base64(value: object) -> bool:
    if isinstance(value, str):
        base64.b64decode(value, validate=True)
    return True


@_FORMATS.checks("uri")  # type: ignore[untyped-decorator]
def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or _URI.match(value) is not None


@functools.cache
def load_schema(revision: str) -> dict[str, Any]:
    """The parsed schema.json of *revision* (cached; do not mutate)."""
    path = SPEC_DIR / revision / "schema.json"
    if not path.is_file():
        raise AssertionError(f"unknown revision {revision!r}: no {path}")
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


def definitions(revision: str) -> Mapping[str, Any]:
    """The schema's definitions (these schemas keep them under ``$defs``)."""
    defs: Mapping[str, Any] = load_schema(revision)["$defs"]
    return defs


@functools.cache
def _registry(revision: str) -> tuple[Registry[Any], str, type[Validator]]:
    schema = load_schema(revision)
    cls: type[Validator] = validator_for(schema)  # picks the draft from "$schema" (2020-12)
    cls.check_schema(schema)
    uri = f"urn:mcpkit-test:spec:{revision}"
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(uri, resource)
    return registry, uri, cls


@functools.cache
def _validator(revision: str, definition: str) -> Validator:
    if definition not in definitions(revision):
        raise AssertionError(f"{revision}: schema has no definition {definition!r}")
    registry, uri, cls = _registry(revision)
    ref = {"$ref": f"{uri}#/$defs/{definition}"}
    return cls(ref, registry=registry, format_checker=_FORMATS)


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(error: ValidationError) -> str:
    where = error.json_path
    line = f"  - at {where}: {_short(error.message)}"
    if error.context:  # anyOf/oneOf: show the closest branch's own complaint
        best = min(error.context, key=relevance)
        line += f"\n      closest branch, at {best.json_path}: {_short(best.message)}"
    return line


def validate_definition(revision: str, definition: str, instance: Any) -> None:
    """Assert that *instance* is valid against ``#/$defs/<definition>`` of *revision*."""
    errors = sorted(_validator(revision, definition).iter_errors(instance), key=relevance)
    if errors:
        listed = "\n".join(_describe(e) for e in errors[:10])
        more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise AssertionError(
            f"{revision} {definition}: {len(errors)} schema error(s):\n{listed}{more}\n"
            f"instance: {_short(json.dumps(instance, default=repr), 600)}"
        )


# --- outgoing (server-emitted) messages ---


def _check_revision(revision: str) -> None:
    if revision not in RESULTS:
        raise AssertionError(f"unknown revision {revision!r}; known: {', '.join(REVISIONS)}")


def _validate_result(revision: str, message: dict[str, Any], method: str | None) -> None:
    if method is None:
        raise AssertionError("a result response needs request_method= to pick its definition")
    result_def = RESULTS[revision].get(method)
    if result_def is None:
        raise AssertionError(f"{revision}: no result definition known for method {method!r}")
    validate_definition(revision, "JSONRPCResultResponse", message)
    result = message["result"]
    chosen = result_def
    if revision == MODERN and result.get("resultType") == "input_required":
        if method not in INPUT_REQUIRED_METHODS:
            raise AssertionError(f"{revision}: {method!r} may not answer with input_required")
        chosen = "InputRequiredResult"
    elif revision == LEGACY and method == "tools/call" and "task" in result:
        chosen = "CreateTaskResult"  # task-augmented call
    validate_definition(revision, chosen, result)
    response_def = f"{result_def}Response"  # 2026-07-28 names per-method response envelopes
    if response_def in definitions(revision):
        validate_definition(revision, response_def, message)


def _validate_error(revision: str, message: dict[str, Any]) -> None:
    validate_definition(revision, "JSONRPCErrorResponse", message)
    code = message["error"]["code"]
    specific = ERROR_CODES[revision].get(code)
    if specific is not None:
        definition, scope = specific
        validate_definition(revision, definition, message["error"] if scope == "error" else message)


def validate_outgoing(
    revision: str, message: dict[str, Any], *, request_method: str | None = None
) -> None:
    """Assert that *message*, sent by a server speaking *revision*, matches the schema.

    Results need *request_method* (the method of the request being answered). Error
    responses are checked against the generic envelope plus the code's own definition where
    the schema has one (open-ended codes such as -32002 only get the envelope).
    """
    _check_revision(revision)
    if not isinstance(message, dict):
        raise AssertionError(f"a JSON-RPC message must be an object, got {type(message).__name__}")
    shape = [key for key in ("method", "result", "error") if key in message]
    if len(shape) != 1:
        raise AssertionError(
            f"a message needs exactly one of method/result/error, has {shape or 'none'}: "
            f"{_short(json.dumps(message, default=repr))}"
        )
    kind = shape[0]
    if kind == "result":
        _validate_result(revision, message, request_method)
    elif kind == "error":
        _validate_error(revision, message)
    else:
        method = message["method"]
        if "id" in message:
            table, what = SERVER_REQUESTS[revision], "server->client request"
        else:
            table, what = NOTIFICATIONS[revision], "server notification"
        definition = table.get(method) if isinstance(method, str) else None
        if definition is None:
            raise AssertionError(f"{revision}: no schema definition for {what} {method!r}")
        validate_definition(revision, definition, message)
