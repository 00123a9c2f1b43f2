"""HTTP header rules of 2026-07-28 Streamable HTTP: protocol/headers."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpkit.protocol.headers import (
    HeaderParam,
    InvalidHeaderAnnotation,
    decode_header_value,
    encode_header_value,
    expected_param_headers,
    header_params,
    validate_request_headers,
)
from mcpkit.types.errors import HEADER_MISMATCH, McpError
from support.mcp import b64_sentinel

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


# --------------------------------------------------------------------------- value encoding


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("=?base64?SGVsbG8=?=", "Hello"),  # conformance: valid sentinel
        ("=?base64??=", ""),
        (b64_sentinel("héllo wörld"), "héllo wörld"),
        (b64_sentinel(" padded "), " padded "),
        (b64_sentinel("=?base64?SGVsbG8=?="), "=?base64?SGVsbG8=?="),
        ("plain-value", "plain-value"),
        ("with inner space", "with inner space"),
        (
            "=?base64?SGVs!!!bG8=?=",
            "=?base64?SGVs!!!bG8=?=",
        ),  # conformance: not base64 chars -> literal
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # markers are lower-case and exact
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no closing marker -> literal
        ("", ""),
    ],
)
def test_decode_header_value(raw: str, expected: str) -> None:
    assert decode_header_value(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?SGVsbG8?=",  # conformance: bad padding is rejected, not read literally
        "=?base64?S?=",
        "=?base64?" + base64.b64encode(b"\xff\xfe").decode() + "?=",  # not UTF-8 inside
        "caf\u00e9",  # raw non-ASCII
        "bell\x07",
        "nul\x00",
        "del\x7f",
    ],
)
def test_decode_header_value_rejects_malformed(raw: str) -> None:
    with pytest.raises(ValueError):
        decode_header_value(raw)


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),
        ("with space inside", "with space inside"),
        ("", ""),
        (True, "true"),
        (False, "false"),
        (42, "42"),
        (-7, "-7"),
        (0, "0"),
    ],
)
def test_plain_values_are_sent_as_is(value: Any, header: str) -> None:
    assert encode_header_value(value) == header


@pytest.mark.parametrize(
    "value",
    [
        "=?base64?SGVsbG8=?=",  # looks like the sentinel: must be encoded
        "=?base64??=",
        " leading",
        "trailing ",
        "\ttab",
        "naïve",
        "日本語",
        "line\nbreak",
        "carriage\rreturn",
        "ctrl\x01",
        "del\x7f",
    ],
)
def test_unsafe_values_are_base64_encoded(value: str) -> None:
    header = encode_header_value(value)
    assert header == b64_sentinel(value)
    assert decode_header_value(header) == value


@given(st.text())
def test_header_encoding_round_trips_any_text(value: str) -> None:
    try:
        value.encode()
    except UnicodeEncodeError:  # lone surrogates cannot be UTF-8 at all
        return
    header = encode_header_value(value)
    assert all(0x20 <= ord(ch) <= 0x7E for ch in header)
    assert header == header.strip()
    assert decode_header_value(header) == value


# --------------------------------------------------------------------------- x-mcp-header rules


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def test_header_params_collects_annotations_in_order() -> None:
    schema = obj(
        region={"type": "string", "x-mcp-header": "Region"},
        count={"type": "integer", "x-mcp-header": "Count"},
        dry={"type": "boolean", "x-mcp-header": "Dry-Run"},
        plain={"type": "string"},
    )
    assert header_params(schema) == (
        HeaderParam(("region",), "Region", "string"),
        HeaderParam(("count",), "Count", "integer"),
        HeaderParam(("dry",), "Dry-Run", "boolean"),
    )
    assert header_params(schema)[2].header_key == "mcp-param-dry-run"


def test_nested_properties_chain_is_allowed() -> None:
    schema = obj(outer=obj(inner={"type": "string", "x-mcp-header": "Inner"}))
    assert header_params(schema) == (HeaderParam(("outer", "inner"), "Inner", "string"),)


def test_schema_without_annotations() -> None:
    assert header_params(obj(a={"type": "string"})) == ()
    assert header_params({"type": "object"}) == ()


@pytest.mark.parametrize("kind", ["number", "object", "array", "null", None])
def test_annotation_only_on_string_integer_boolean(kind: str | None) -> None:
    prop: dict[str, Any] = {"x-mcp-header": "H"}
    if kind is not None:
        prop["type"] = kind
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(obj(p=prop))


@pytest.mark.parametrize(
    "name",
    ["", "has space", "colon:", "semi;colon", "ünï", "new\nline", "tab\t", "(paren)", "a/b", 5],
)
def test_annotation_must_be_a_token(name: Any) -> None:
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(obj(p={"type": "string", "x-mcp-header": name}))


@pytest.mark.parametrize("name", ["Region\n"])
def test_annotation_with_trailing_newline_is_rejected(name: str) -> None:
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(obj(p={"type": "string", "x-mcp-header": name}))


@pytest.mark.parametrize("name", ["X", "Region", "a-b_c.d", "!#$%&'*+-.^_`|~09azAZ"])
def test_tchar_names_are_accepted(name: str) -> None:
    assert header_params(obj(p={"type": "string", "x-mcp-header": name}))[0].header == name


def test_annotations_must_be_unique_case_insensitively() -> None:
    schema = obj(
        a={"type": "string", "x-mcp-header": "Region"},
        b={"type": "string", "x-mcp-header": "REGION"},
    )
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(schema)
    nested = obj(
        a={"type": "string", "x-mcp-header": "Dup"},
        b=obj(c={"type": "integer", "x-mcp-header": "dup"}),
    )
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(nested)


_ANNOTATED = {"type": "string", "x-mcp-header": "Bad"}
_MISPLACED_DIRECT = {
    "items": obj(list={"type": "array", "items": _ANNOTATED}),
    "anyOf-branch": {"type": "object", "anyOf": [_ANNOTATED]},
    "not": obj(p={"not": _ANNOTATED}),
    "if": obj(p={"type": "string", "if": _ANNOTATED}),
}
_MISPLACED_VIA_PROPERTIES = {
    "items.properties": obj(
        list={"type": "array", "items": obj(a=_ANNOTATED)},
    ),
    "anyOf.properties": {"type": "object", "anyOf": [obj(a=_ANNOTATED)]},
    "oneOf.properties": obj(p={"oneOf": [obj(a=_ANNOTATED)]}),
    "allOf.properties": {"type": "object", "allOf": [obj(a=_ANNOTATED)]},
    "then.properties": {"type": "object", "if": obj(), "then": obj(a=_ANNOTATED)},
    "$defs.properties": {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/d"}},
        "$defs": {"d": obj(a=_ANNOTATED)},
    },
}


@pytest.mark.parametrize("schema", _MISPLACED_DIRECT.values(), ids=_MISPLACED_DIRECT.keys())
def test_annotation_outside_a_properties_chain_is_rejected(schema: dict[str, Any]) -> None:
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(schema)


@pytest.mark.parametrize(
    "schema", _MISPLACED_VIA_PROPERTIES.values(), ids=_MISPLACED_VIA_PROPERTIES.keys()
)
def test_annotation_under_properties_of_a_non_properties_node_is_rejected(
    schema: dict[str, Any],
) -> None:
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(schema)


def test_expected_param_headers() -> None:
    params = header_params(
        obj(
            region={"type": "string", "x-mcp-header": "Region"},
            n={"type": "integer", "x-mcp-header": "N"},
            flag={"type": "boolean", "x-mcp-header": "Flag"},
            deep=obj(v={"type": "string", "x-mcp-header": "Deep"}),
        )
    )
    assert expected_param_headers(params, {"region": "eu", "n": 3, "flag": False}) == {
        "Mcp-Param-Region": "eu",
        "Mcp-Param-N": "3",
        "Mcp-Param-Flag": "false",
    }
    assert expected_param_headers(params, {"region": "ü", "deep": {"v": " x"}}) == {
        "Mcp-Param-Region": b64_sentinel("ü"),
        "Mcp-Param-Deep": b64_sentinel(" x"),
    }
    assert expected_param_headers(params, {"region": None}) == {}
    assert expected_param_headers(params, None) == {}


# --------------------------------------------------------------------------- request validation


def request(method: str, params: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    body = {"_meta": dict(META), **(params or {})}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": body, **kw}


def headers_for(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    out = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        out["mcp-name"] = name
    out.update(extra)
    return out


def expect_mismatch(
    headers: dict[str, str],
    message: dict[str, Any],
    *words: str,
    params: tuple[HeaderParam, ...] = (),
) -> None:
    with pytest.raises(McpError) as info:
        validate_request_headers(headers, message, params)
    assert info.value.code == HEADER_MISMATCH == -32020
    assert info.value.http_status == 400
    assert info.value.message.startswith("Header mismatch")
    for word in words:
        assert word.lower() in info.value.message.lower(), info.value.message


def test_valid_headers_pass() -> None:
    validate_request_headers(headers_for("tools/list"), request("tools/list"))
    validate_request_headers(
        headers_for("tools/call", "echo"), request("tools/call", {"name": "echo"})
    )
    validate_request_headers(
        headers_for("resources/read", "file:///a b.txt"),
        request("resources/read", {"uri": "file:///a b.txt"}),
    )
    validate_request_headers(
        headers_for("prompts/get", b64_sentinel("grüße")), request("prompts/get", {"name": "grüße"})
    )


def test_missing_protocol_version_header() -> None:
    headers = headers_for("tools/list")
    del headers["mcp-protocol-version"]
    expect_mismatch(headers, request("tools/list"), "MCP-Protocol-Version")


def test_protocol_version_header_must_equal_meta() -> None:
    headers = headers_for("tools/list", **{"mcp-protocol-version": "2025-11-25"})
    expect_mismatch(headers, request("tools/list"), "MCP-Protocol-Version")


def test_version_is_checked_before_method() -> None:
    headers = {"mcp-protocol-version": "1999-01-01", "mcp-method": "wrong"}
    expect_mismatch(headers, request("tools/list"), "MCP-Protocol-Version")


def test_missing_and_mismatched_method() -> None:
    expect_mismatch({"mcp-protocol-version": MODERN}, request("tools/list"), "Mcp-Method")
    expect_mismatch(headers_for("prompts/list"), request("tools/list"), "Mcp-Method")
    # values are case-sensitive
    expect_mismatch(headers_for("Tools/List"), request("tools/list"), "Mcp-Method")


def test_method_is_checked_before_name() -> None:
    expect_mismatch(
        headers_for("tools/list", "other"), request("tools/call", {"name": "echo"}), "Mcp-Method"
    )


@pytest.mark.parametrize(
    ("method", "member"),
    [("tools/call", "name"), ("prompts/get", "name"), ("resources/read", "uri")],
)
def test_name_header_is_required_and_must_match(method: str, member: str) -> None:
    message = request(method, {member: "thing"})
    expect_mismatch(headers_for(method), message, "Mcp-Name")
    expect_mismatch(headers_for(method, "other"), message, "Mcp-Name")
    expect_mismatch(headers_for(method, "Thing"), message, "Mcp-Name")
    validate_request_headers(headers_for(method, "thing"), message)
    validate_request_headers(headers_for(method, b64_sentinel("thing")), message)


def test_name_header_with_bad_base64_or_raw_non_ascii() -> None:
    message = request("tools/call", {"name": "Hello"})
    expect_mismatch(headers_for("tools/call", "=?base64?SGVsbG8?="), message, "Mcp-Name")
    expect_mismatch(headers_for("tools/call", "Héllo"), request("tools/call", {"name": "Héllo"}))


def test_notification_needs_only_the_version_header() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    validate_request_headers({"mcp-protocol-version": MODERN}, note)
    expect_mismatch({}, note, "MCP-Protocol-Version")


_PARAMS = header_params(
    obj(
        region={"type": "string", "x-mcp-header": "Region"},
        count={"type": "integer", "x-mcp-header": "Count"},
        dry={"type": "boolean", "x-mcp-header": "Dry"},
    )
)


def call(arguments: dict[str, Any]) -> dict[str, Any]:
    return request("tools/call", {"name": "t", "arguments": arguments})


def test_param_headers_pass_when_they_match() -> None:
    headers = headers_for(
        "tools/call",
        "t",
        **{"mcp-param-region": "eu", "mcp-param-count": "3", "mcp-param-dry": "true"},
    )
    validate_request_headers(headers, call({"region": "eu", "count": 3, "dry": True}), _PARAMS)
    # integers are compared numerically
    numeric = dict(headers, **{"mcp-param-count": "003"})
    validate_request_headers(numeric, call({"region": "eu", "count": 3, "dry": True}), _PARAMS)
    # absent (or null) body values need no header
    validate_request_headers(headers_for("tools/call", "t"), call({"region": None}), _PARAMS)


@pytest.mark.parametrize(
    ("arguments", "param_headers", "word"),
    [
        ({"region": "eu"}, {}, "Mcp-Param-Region"),  # value without header
        ({}, {"mcp-param-region": "eu"}, "Mcp-Param-Region"),  # header without value
        ({"region": "eu"}, {"mcp-param-region": "us"}, "Mcp-Param-Region"),
        ({"region": "é"}, {"mcp-param-region": "=?base64?w6k?="}, "Mcp-Param-Region"),  # bad pad
        ({"count": 3}, {"mcp-param-count": "4"}, "Mcp-Param-Count"),
        ({"count": 3}, {"mcp-param-count": "three"}, "Mcp-Param-Count"),
        ({"count": 2**60}, {"mcp-param-count": str(2**60)}, "Mcp-Param-Count"),  # > 2^53-1
        ({"dry": True}, {"mcp-param-dry": "True"}, "Mcp-Param-Dry"),
        ({"dry": False}, {"mcp-param-dry": "0"}, "Mcp-Param-Dry"),
    ],
)
def test_param_header_mismatches(
    arguments: dict[str, Any], param_headers: dict[str, str], word: str
) -> None:
    headers = headers_for("tools/call", "t", **param_headers)
    expect_mismatch(headers, call(arguments), word, params=_PARAMS)


def test_encoded_param_header_matches_decoded_value() -> None:
    headers = headers_for("tools/call", "t", **{"mcp-param-region": b64_sentinel("Zürich ")})
    validate_request_headers(headers, call({"region": "Zürich "}), _PARAMS)
