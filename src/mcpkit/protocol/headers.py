"""HTTP header rules of 2026-07-28 Streamable HTTP (SEP-2243).

Every POST carries ``MCP-Protocol-Version``; requests carry ``Mcp-Method``; ``tools/call``,
``prompts/get`` and ``resources/read`` (and the tasks methods) carry ``Mcp-Name``; tool
arguments annotated with ``x-mcp-header: "Foo"`` travel as ``Mcp-Param-Foo``.  A server that
reads the body must reject any header that is missing, differs from the body, or is
malformed, with HTTP 400 and ``-32020``.

Values that are not plain visible ASCII (or that look like the sentinel) are sent as
``=?base64?<base64 of UTF-8>?=``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..types.errors import header_mismatch
from ..types.methods import name_param
from ..types.versions import META_PROTOCOL_VERSION

PROTOCOL_VERSION: Final = "mcp-protocol-version"
METHOD: Final = "mcp-method"
NAME: Final = "mcp-name"
PARAM_PREFIX: Final = "mcp-param-"
SESSION_ID: Final = "mcp-session-id"

_SENTINEL = re.compile(r"=\?base64\?([A-Za-z0-9+/=]*)\?=")
_TCHAR = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_MAX_SAFE_INT: Final = 2**53 - 1


def _plain_ok(value: str) -> bool:
    if not value or value != value.strip(" \t"):
        return value == ""
    return all(0x20 <= ord(ch) <= 0x7E for ch in value) and not _SENTINEL.fullmatch(value)


def encode_header_value(value: str | int | bool) -> str:
    """Header text for a body value (booleans ``true``/``false``, integers in decimal)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if _plain_ok(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def decode_header_value(raw: str) -> str:
    """The text a header value stands for; raises :class:`ValueError` when malformed."""
    if raw.isascii() and raw.isprintable() and not raw.startswith("=?"):
        return raw  # plain visible ASCII (the usual case): no sentinel, nothing to check
    match = _SENTINEL.fullmatch(raw)
    if match:
        try:
            return base64.b64decode(match.group(1), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"invalid base64 header value: {exc}") from None
    if any(not (0x20 <= ord(ch) <= 0x7E) and ch != "\t" for ch in raw):
        raise ValueError("header value has characters outside visible ASCII")
    return raw


@dataclass(frozen=True, slots=True)
class HeaderParam:
    """One ``x-mcp-header`` annotation: the property path in the arguments and its header."""

    path: tuple[str, ...]
    header: str
    kind: str  # "string" | "integer" | "boolean"

    @property
    def header_key(self) -> str:
        return PARAM_PREFIX + self.header.lower()


class InvalidHeaderAnnotation(ValueError):
    """A tool's ``x-mcp-header`` annotations break the rules (clients must drop the tool)."""


def header_params(schema: Mapping[str, Any]) -> tuple[HeaderParam, ...]:
    """Collect and validate the ``x-mcp-header`` annotations of a tool input schema.

    Only properties reachable by a chain of ``properties`` keys count; annotations anywhere
    else (items, combinators, conditionals, ``$ref`` targets) are invalid.
    """
    try:
        return _header_params(schema)
    except RecursionError:
        raise InvalidHeaderAnnotation("the schema nests too deeply to check") from None


def _header_params(schema: Mapping[str, Any]) -> tuple[HeaderParam, ...]:
    found: list[HeaderParam] = []
    seen: set[str] = set()
    for path, prop in _walk_properties(schema, ()):
        header = prop.get("x-mcp-header")
        if header is None:
            continue
        if not isinstance(header, str) or not header or not _TCHAR.fullmatch(header):
            raise InvalidHeaderAnnotation(f"x-mcp-header at {'.'.join(path)} is not a token")
        kind = prop.get("type")
        if kind not in ("string", "integer", "boolean"):
            raise InvalidHeaderAnnotation(
                f"x-mcp-header at {'.'.join(path)} must be on a string, integer or boolean"
            )
        key = header.lower()
        if key in seen:
            raise InvalidHeaderAnnotation(f"duplicate x-mcp-header {header!r}")
        seen.add(key)
        found.append(HeaderParam(path, header, kind))
    if _has_misplaced_annotation(schema, chained=False, root=True):
        raise InvalidHeaderAnnotation("x-mcp-header outside a chain of properties")
    return tuple(found)


def _walk_properties(
    schema: Mapping[str, Any], prefix: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return
    for key, prop in props.items():
        if isinstance(prop, Mapping):
            path = (*prefix, key)
            yield path, prop
            yield from _walk_properties(prop, path)


def _has_misplaced_annotation(node: Any, *, chained: bool, root: bool = False) -> bool:
    """True when ``x-mcp-header`` appears on a schema not reached from the root by an
    unbroken chain of ``properties`` keys.

    ``chained`` says whether ``node`` itself was reached that way; anything under a
    combinator, ``items``, a conditional or ``$defs`` breaks the chain for good, even when
    it has ``properties`` of its own.
    """
    if isinstance(node, Mapping):
        if "x-mcp-header" in node and not chained:
            return True
        for key, value in node.items():
            if key == "x-mcp-header":
                continue
            if key == "properties" and isinstance(value, Mapping):
                inherit = chained or root
                if any(_has_misplaced_annotation(p, chained=inherit) for p in value.values()):
                    return True
            elif _has_misplaced_annotation(value, chained=False):
                return True
    elif isinstance(node, list):
        return any(_has_misplaced_annotation(item, chained=False) for item in node)
    return False


def _lookup(arguments: object, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def expected_param_headers(
    params: tuple[HeaderParam, ...], arguments: Mapping[str, Any] | None
) -> dict[str, str]:
    """Headers a client must send for these arguments (lower-case names)."""
    out: dict[str, str] = {}
    for param in params:
        value = _lookup(arguments or {}, param.path)
        if value is None:
            continue
        if isinstance(value, (str, int, bool)) and not isinstance(value, float):
            out["Mcp-Param-" + param.header] = encode_header_value(value)
    return out


def validate_request_headers(
    headers: Mapping[str, str],
    message: Mapping[str, Any],
    params: tuple[HeaderParam, ...] = (),
) -> None:
    """Check the standard MCP headers of one modern request against its body.

    ``headers`` maps lower-case header names to values.  Raises ``-32020`` on the first
    problem, naming the header.
    """
    method = message.get("method")
    body_params = message.get("params") or {}
    # ``type(x) is dict`` first: a decoded body is plain dicts, and the ABC check is slow.
    params_ok = type(body_params) is dict or isinstance(body_params, Mapping)
    meta = body_params.get("_meta") if params_ok else None
    meta_ok = type(meta) is dict or isinstance(meta, Mapping)
    body_version = meta.get(META_PROTOCOL_VERSION) if meta_ok and meta is not None else None
    version = headers.get(PROTOCOL_VERSION)
    if version is None:
        raise header_mismatch("missing MCP-Protocol-Version header")
    if body_version is not None and version != body_version:
        raise header_mismatch(
            f"MCP-Protocol-Version header {version!r} does not match _meta {body_version!r}"
        )
    if "id" not in message:
        return
    member = name_param(method) if isinstance(method, str) else None
    check_request_headers(headers, method, body_params if params_ok else None, member, params)


def check_request_headers(
    headers: Mapping[str, str],
    method: Any,
    body_params: Mapping[str, Any] | None,
    member: str | None,
    params: tuple[HeaderParam, ...] = (),
) -> None:
    """The request part of :func:`validate_request_headers`, for a caller that has already
    checked ``MCP-Protocol-Version`` against ``_meta`` and looked up the method's
    ``Mcp-Name`` member (``name_param``): ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``.
    ``body_params``: the request's params when they are a mapping, else None."""
    got_method = headers.get(METHOD)
    if got_method is None:
        raise header_mismatch("missing Mcp-Method header")
    if got_method != method:
        raise header_mismatch(f"Mcp-Method header {got_method!r} does not match body {method!r}")
    if member is not None:
        raw = headers.get(NAME)
        if raw is None:
            raise header_mismatch("missing Mcp-Name header")
        try:
            decoded = decode_header_value(raw)
        except ValueError as exc:
            raise header_mismatch(f"Mcp-Name: {exc}") from None
        body_value = body_params.get(member) if body_params is not None else None
        if decoded != body_value:
            raise header_mismatch(f"Mcp-Name header {decoded!r} does not match params.{member}")
    if params:
        arguments = body_params.get("arguments") if body_params is not None else None
        check_param_headers(headers, params, arguments)


def check_param_headers(
    headers: Mapping[str, str],
    params: tuple[HeaderParam, ...],
    arguments: Any,
) -> None:
    for param in params:
        value = _lookup(arguments or {}, param.path)
        raw = headers.get(param.header_key)
        if value is None:
            if raw is not None:
                raise header_mismatch(f"Mcp-Param-{param.header} sent without a body value")
            continue
        if raw is None:
            raise header_mismatch(f"missing Mcp-Param-{param.header} header")
        try:
            text = decode_header_value(raw)
        except ValueError as exc:
            raise header_mismatch(f"Mcp-Param-{param.header}: {exc}") from None
        if not _same_value(text, value):
            raise header_mismatch(f"Mcp-Param-{param.header} does not match the argument value")


def _same_value(text: str, value: object) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int):
        try:
            return int(text) == value and abs(value) <= _MAX_SAFE_INT
        except ValueError:
            return False
    if isinstance(value, float):
        try:
            return float(text) == value
        except ValueError:
            return False
    return isinstance(value, str) and text == value
