"""The JSON-RPC envelope rules (types/jsonrpc.classify) and the one codec (types/codec)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.types import jsonrpc
from mcpkit.types.codec import DecodeError, decode, encode, encode_str
from mcpkit.types.errors import INVALID_REQUEST, McpError
from mcpkit.types.jsonrpc import Kind, classify

# --------------------------------------------------------------------------- classify


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, Kind.REQUEST),
        ({"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {}}, Kind.REQUEST),
        ({"jsonrpc": "2.0", "id": 0, "method": "x"}, Kind.REQUEST),
        ({"jsonrpc": "2.0", "id": -5, "method": "x"}, Kind.REQUEST),
        ({"jsonrpc": "2.0", "id": "", "method": "x"}, Kind.REQUEST),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, Kind.NOTIFICATION),
        ({"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}, Kind.NOTIFICATION),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, Kind.RESULT),
        ({"jsonrpc": "2.0", "id": "x", "result": {"k": [1]}}, Kind.RESULT),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "m"}}, Kind.ERROR),
        # an error may lack an id (the request's id could not be read)
        ({"jsonrpc": "2.0", "error": {"code": -32700, "message": "m"}}, Kind.ERROR),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "m"}}, Kind.ERROR),
        # unknown extra members are ignored
        ({"jsonrpc": "2.0", "id": 1, "method": "x", "extra": True}, Kind.REQUEST),
    ],
)
def test_classify_accepts(message: dict[str, Any], kind: Kind) -> None:
    assert classify(message) is kind


@pytest.mark.parametrize(
    "message",
    [
        # not an object: batches and primitives
        [],
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
        "ping",
        1,
        None,
        True,
        # jsonrpc member
        {"id": 1, "method": "ping"},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": 2.0, "id": 1, "method": "ping"},
        {"jsonrpc": "2.0"},
        {},
        # method member
        {"jsonrpc": "2.0", "id": 1, "method": 1},
        {"jsonrpc": "2.0", "id": 1, "method": ""},
        {"jsonrpc": "2.0", "id": 1, "method": None},
        {"jsonrpc": "2.0", "method": ["ping"]},
        # params member
        {"jsonrpc": "2.0", "id": 1, "method": "x", "params": []},
        {"jsonrpc": "2.0", "id": 1, "method": "x", "params": "bar"},
        {"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3},
        {"jsonrpc": "2.0", "method": 1, "params": "bar"},
        {"jsonrpc": "2.0", "method": "n", "params": [1, 2]},
        # id member of a request
        {"jsonrpc": "2.0", "id": None, "method": "x"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "x"},
        {"jsonrpc": "2.0", "id": True, "method": "x"},
        {"jsonrpc": "2.0", "id": False, "method": "x"},
        {"jsonrpc": "2.0", "id": {}, "method": "x"},
        {"jsonrpc": "2.0", "id": [1], "method": "x"},
        # responses
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}},
        {"jsonrpc": "2.0", "result": {}},
        {"jsonrpc": "2.0", "id": None, "result": {}},
        {"jsonrpc": "2.0", "id": True, "result": {}},
        {"jsonrpc": "2.0", "id": 1.0, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "error": "boom"},
        {"jsonrpc": "2.0", "id": 1, "error": {"message": "no code"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "-32600", "message": "m"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1.5, "message": "m"}},
        # nothing to classify by
        {"jsonrpc": "2.0", "id": 1},
    ],
)
def test_classify_rejects_with_invalid_request(message: Any) -> None:
    with pytest.raises(McpError) as info:
        classify(message)
    assert info.value.code == INVALID_REQUEST == -32600
    assert info.value.http_status == 400
    wire = info.value.to_wire()
    assert wire["code"] == -32600 and isinstance(wire["message"], str) and wire["message"]


def test_string_and_integer_ids_are_distinct_values() -> None:
    assert classify({"jsonrpc": "2.0", "id": "1", "method": "x"}) is Kind.REQUEST
    assert jsonrpc.request("1", "x")["id"] == "1"
    assert jsonrpc.request(1, "x")["id"] == 1


def test_builders_produce_what_classify_accepts() -> None:
    assert classify(jsonrpc.request(7, "tools/list")) is Kind.REQUEST
    assert "params" not in jsonrpc.request(7, "tools/list")
    assert classify(jsonrpc.request(7, "tools/list", {"cursor": "c"})) is Kind.REQUEST
    assert classify(jsonrpc.notification("notifications/progress", {})) is Kind.NOTIFICATION
    assert classify(jsonrpc.result(7, {})) is Kind.RESULT
    err = McpError(-32602, "bad", {"x": 1})
    assert jsonrpc.error(7, err) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32602, "message": "bad", "data": {"x": 1}},
    }
    no_id = jsonrpc.error(None, McpError(-32700, "Parse error"))
    assert "id" not in no_id and classify(no_id) is Kind.ERROR


def test_params_of() -> None:
    assert jsonrpc.params_of({"method": "x"}) == {}
    assert jsonrpc.params_of({"method": "x", "params": {"a": 1}}) == {"a": 1}
    assert jsonrpc.params_of({"method": "x", "params": [1]}) == {}


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (-32700, 400),
        (-32600, 400),
        (-32601, 404),
        (-32602, 400),
        (-32603, 500),
        (-32020, 400),
        (-32021, 400),
        (-32022, 400),
    ],
)
def test_error_codes_map_to_http_statuses(code: int, status: int) -> None:
    assert McpError(code, "m").http_status == status


def test_error_data_is_omitted_when_none() -> None:
    assert McpError(-32603, "m").to_wire() == {"code": -32603, "message": "m"}
    assert McpError(-32603, "m", http_status=503).http_status == 503


# --------------------------------------------------------------------------- codec


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   ",
        b'{"jsonrpc":',
        b"{'a': 1}",
        b"NaN",
        b"[Infinity]",
        b'{"a": 1} // comment',
        b"{} {}",
        b"\xff\xfe",
        b'{"a": "\xff"}',
        b"\xef\xbb\xbf{}",  # BOM
        b'"\\ud800"',  # lone surrogate escape
        b"[" * 100_000 + b"]" * 100_000,  # nesting bomb
        b"1" + b"0" * 5000,  # 5,000-digit integer
    ],
    ids=lambda raw: repr(raw[:24]),
)
def test_decode_rejects_non_json_with_decode_error(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        decode(raw)


def test_decode_error_is_a_value_error() -> None:
    assert issubclass(DecodeError, ValueError)


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, lambda b: b.decode()])
def test_decode_accepts_every_buffer_kind(kind: Any) -> None:
    assert decode(kind(b'{"a": [1, "x", null, true]}')) == {"a": [1, "x", None, True]}


def test_decode_tolerates_surrounding_whitespace_and_trailing_newline() -> None:
    assert decode(b'  {"a":1}\r\n') == {"a": 1}


@pytest.mark.parametrize(
    "value",
    [
        {"text": "line1\nline2\r\nline3\rend"},
        {"text": "\u2028\u2029 separators"},
        {"nested": [{"a": "\n" * 10}], "emoji": "🙂", "ctrl": "\x00\x1f"},
        ["\n"],
        "plain\n",
    ],
)
def test_encode_never_emits_raw_newlines(value: Any) -> None:
    data = encode(value)
    assert isinstance(data, bytes)
    assert b"\n" not in data and b"\r" not in data
    assert decode(data) == value
    text = encode_str(value)
    assert isinstance(text, str) and "\n" not in text and "\r" not in text
    assert decode(text) == value


def test_encode_is_compact_utf8() -> None:
    assert encode({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'.encode()


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"jsonrpc": "1.0", "id": 7, "method": "x"}, 7),
        ({"jsonrpc": "1.0", "id": "a", "method": "x"}, "a"),
        ({"jsonrpc": "2.0", "id": True, "method": "x"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, None),
        ({"jsonrpc": "2.0", "method": 3}, None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "x"}], None),
    ],
)
def test_a_refused_message_is_answered_with_its_own_id_only_when_valid(
    message: Any, expected: Any
) -> None:
    with pytest.raises(McpError):
        jsonrpc.classify(message)
    assert jsonrpc.answerable_id(message) == expected
