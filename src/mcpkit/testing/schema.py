"""Check results against the official MCP JSON Schemas, shipped with this package.

A test that compares a result with a hand-written expectation only checks what its author
thought of; the spec's own schema also catches a missing ``resultType``, a content block
of the wrong shape or a bad ``ttlMs``.  The schemas of both revisions mcpkit speaks
(``spec/<revision>/schema.json``, copied unchanged from the spec repository; a test in
mcpkit's suite keeps them identical to ``tests/spec``) ship inside the package, so users'
test suites need no checkout of the spec.  Validators are compiled once per definition.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from importlib import resources
from typing import Any

from jsonschema import FormatChecker
from jsonschema.exceptions import best_match, relevance
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from ..types.versions import LATEST_LEGACY, LATEST_MODERN

MODERN = LATEST_MODERN
LEGACY = LATEST_LEGACY
REVISIONS = (LEGACY, MODERN)

_COMMON_RESULTS = {
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "completion/complete": "CompleteResult",
}
#: The result definition of each client->server request, per revision.
RESULTS: dict[str, dict[str, str]] = {
    LEGACY: {
        **_COMMON_RESULTS,
        "initialize": "InitializeResult",
        "ping": "EmptyResult",
        "logging/setLevel": "EmptyResult",
        "resources/subscribe": "EmptyResult",
        "resources/unsubscribe": "EmptyResult",
        "tasks/get": "GetTaskResult",
    },
    MODERN: {
        **_COMMON_RESULTS,
        "server/discover": "DiscoverResult",
        "subscriptions/listen": "SubscriptionsListenResult",
    },
}

# "format" is an annotation in these schemas; the two that matter on the wire are checked
# here (jsonschema's own "uri" check needs an optional package and would pass silently).
_FORMATS = FormatChecker(formats=())
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:\S*$")


def _is_base64(value: object) -> bool:
    if isinstance(value, str):
        base64.b64decode(value, validate=True)
    return True


def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or _URI.match(value) is not None


# Registered by call, not as decorators: jsonschema is untyped, and mypy --strict would
# otherwise take the functions for untyped ones.
_FORMATS.checks("byte", raises=(binascii.Error, ValueError))(_is_base64)
_FORMATS.checks("uri")(_is_uri)


@functools.cache
def load_schema(revision: str) -> dict[str, Any]:
    """The parsed ``schema.json`` of ``revision`` (cached: do not mutate it)."""
    if revision not in REVISIONS:
        raise ValueError(f"no schema for revision {revision!r}; have {list(REVISIONS)}")
    text = (
        resources.files(__package__)
        .joinpath("spec", revision, "schema.json")
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator(revision: str, definition: str) -> Validator:
    schema = load_schema(revision)
    if definition not in schema["$defs"]:
        raise ValueError(f"the {revision} schema has no definition {definition!r}")
    cls: type[Validator] = validator_for(schema)
    uri = f"urn:mcpkit:spec:{revision}"
    registry: Registry[Any] = Registry().with_resource(
        uri, Resource.from_contents(schema, default_specification=DRAFT202012)
    )
    return cls({"$ref": f"{uri}#/$defs/{definition}"}, registry=registry, format_checker=_FORMATS)


def assert_valid(instance: object, definition: str, revision: str = MODERN) -> None:
    """Raise ``AssertionError`` listing every violation unless ``instance`` validates
    against ``#/$defs/<definition>`` of ``revision``'s schema."""
    errors = sorted(_validator(revision, definition).iter_errors(instance), key=relevance)
    if not errors:
        return
    lines = []
    for error in errors[:10]:
        message = " ".join(error.message.split())
        if error.context:  # anyOf/oneOf: the closest branch's own complaint says more
            inner = best_match(error.context)
            message += f" (closest: at {inner.json_path}: {' '.join(inner.message.split())})"
        lines.append(f"  - at {error.json_path}: {message[:300]}")
    raise AssertionError(
        f"not a valid {definition} ({revision}), {len(errors)} problem(s):\n" + "\n".join(lines)
    )


def assert_valid_result(method: str, result: object, revision: str = MODERN) -> None:
    """Check the result of a ``method`` request (e.g. what ``client.call_tool`` returned)
    against the schema of ``revision`` (``client.protocol_version`` for a legacy client is
    checked against 2025-11-25, the one legacy schema shipped)."""
    revision = MODERN if revision == MODERN else LEGACY
    definition = RESULTS[revision].get(method)
    if definition is None:
        raise ValueError(f"no result definition for {method!r} in {revision}")
    assert_valid(result, definition, revision)


__all__ = ["LEGACY", "MODERN", "RESULTS", "REVISIONS", "assert_valid", "assert_valid_result"]
