"""Property-based tests (Hypothesis): the codec, the HTTP header rules, the SSE encoder
(checked against httpx-sse, the parser our client uses), URI templates, the stdio line
framer and the runtime Endpoint's response routing.

Each property says: arbitrary input never raises anything but the documented error,
never takes more than linear time, and never produces an answer for the wrong request.

Linear time is measured without wall clocks where the code is Python: the number of
Python line events (``sys.settrace``) for an input repeated twice may be at most ~3x the
count for the input once.  C code (orjson, ``re``) gets generous absolute bounds instead,
chosen so that a super-linear implementation would miss them by orders of magnitude.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import string
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
from httpx_sse import EventSource
from hypothesis import example, given, settings, target
from hypothesis import strategies as st

from mcpkit.protocol import headers as hdr
from mcpkit.protocol.framing import LineFramer, Overflow
from mcpkit.protocol.sse import encode_event, priming_event
from mcpkit.runtime.endpoint import Endpoint
from mcpkit.runtime.pending import EndpointClosed
from mcpkit.server.uritemplate import MAX_URI_LENGTH, TemplateError, UriTemplate
from mcpkit.types.codec import DecodeError, decode, encode
from mcpkit.types.errors import HEADER_MISMATCH, McpError

if TYPE_CHECKING:
    from conftest import Rel

#: The Hypothesis profile registered in conftest.py (``MCPKIT_HYPOTHESIS_PROFILE`` picks it).
PROFILE = settings.get_profile(os.environ.get("MCPKIT_HYPOTHESIS_PROFILE", "reliability"))

text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(text, inner, max_size=5),
    max_leaves=40,
)


def line_events(fn: Callable[[], Any]) -> int:
    """Python line events executed by ``fn()`` (a deterministic work measure)."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count


def assert_linear(work_once: int, work_twice: int, slack: int = 60) -> None:
    # Steer the search towards the worst ratio; Hypothesis keeps the inputs that maximise
    # it in the example database (tests/reliability/.hypothesis-db), so CI replays them.
    target(work_twice / max(work_once, 1), label="work ratio for a doubled input")
    assert work_twice <= 3 * work_once + slack, f"work {work_once} -> {work_twice} for 2x input"


# ------------------------------ codec


@PROFILE
@given(json_values)
def test_codec_round_trips_and_never_emits_a_raw_newline(rel: Rel, value: Any) -> None:
    data = encode(value)
    assert b"\n" not in data and b"\r" not in data
    assert decode(data) == value
    rel.verified()


@PROFILE
@given(st.binary(max_size=400))
@example(b"\xff\xfe")
@example(b"[" * 5000)
@example(b"9" * 5000)
@example(b'"\\ud800"')
@example(b"\xef\xbb\xbf{}")
def test_codec_decode_arbitrary_bytes_raises_only_decode_error(rel: Rel, data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode(data)
    rel.verified()


@pytest.mark.parametrize(
    "build",
    [
        lambda n: b"[" * n,
        lambda n: b'"' + b"\\u0041" * (n // 6) + b'"',
        lambda n: b"[" + b"1," * (n // 2) + b"1]",
        lambda n: b'{"a":' + b'"' + b"x" * n + b'"}',
        lambda n: b" " * n + b"1",
    ],
    ids=["nesting", "escapes", "numbers", "long-string", "whitespace"],
)
def test_codec_decode_time_is_linear_generous_bound(
    rel: Rel, build: Callable[[int], bytes]
) -> None:
    for n in (1 << 20, 4 << 20):
        data = build(n)
        started = time.perf_counter()
        with contextlib.suppress(DecodeError):
            decode(data)
        assert time.perf_counter() - started < 2.0, f"{n} bytes"
    rel.verified()


# ------------------------------ header rules


@PROFILE
@given(text)
@example("")
@example(" padded ")
@example("=?base64?SGk=?=")
@example("tab\there")
@example("ünïcödé")
def test_header_value_encoding_round_trips_as_visible_ascii(rel: Rel, value: str) -> None:
    wire = hdr.encode_header_value(value)
    assert all(0x20 <= ord(ch) <= 0x7E for ch in wire), wire
    assert wire == wire.strip(" \t")
    assert hdr.decode_header_value(wire) == value
    rel.verified()


@PROFILE
@given(st.text(max_size=80))
@example("=?base64?!!!?=")
@example("=?base64?/w==?=")
@example("a\r\nb")
def test_header_value_decoding_raises_only_value_error(rel: Rel, raw: str) -> None:
    try:
        out = hdr.decode_header_value(raw)
    except ValueError:
        pass
    else:
        assert isinstance(out, str)
    rel.verified()


header_names = st.sampled_from(
    [hdr.PROTOCOL_VERSION, hdr.METHOD, hdr.NAME, "mcp-param-region", "mcp-param-x"]
)
methods = (
    st.sampled_from(["tools/call", "prompts/get", "resources/read", "tools/list", "tasks/get", "x"])
    | text
)


@PROFILE
@given(
    headers=st.dictionaries(
        header_names,
        st.text(max_size=30)
        | st.sampled_from(["2026-07-28", "tools/call", "echo", "=?base64?ZWNobw==?="]),
        max_size=5,
    ),
    method=methods,
    params=st.none()
    | st.dictionaries(
        st.sampled_from(["name", "uri", "taskId", "_meta", "arguments"]), json_values, max_size=4
    )
    | json_values,
    has_id=st.booleans(),
    param_headers=st.booleans(),
)
def test_header_validation_raises_only_header_mismatch(
    rel: Rel, headers: dict[str, str], method: str, params: Any, has_id: bool, param_headers: bool
) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if has_id:
        message["id"] = 1
    annotations = (
        (hdr.HeaderParam(("region",), "Region", "string"), hdr.HeaderParam(("x",), "X", "integer"))
        if param_headers
        else ()
    )
    try:
        hdr.validate_request_headers(headers, message, annotations)
    except McpError as err:
        assert err.code == HEADER_MISMATCH
        rel.verified()
        return
    # accepted: then the headers really describe this body
    assert headers.get(hdr.PROTOCOL_VERSION) is not None
    if has_id:
        assert headers.get(hdr.METHOD) == method
        from mcpkit.types.methods import name_param

        member = name_param(method) if isinstance(method, str) else None
        if member is not None:
            assert isinstance(params, dict)
            assert hdr.decode_header_value(headers[hdr.NAME]) == params.get(member)
    rel.verified()


def schemas(depth: int = 4) -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "boolean", "number", "object", "array"])},
        optional={"x-mcp-header": st.sampled_from(["Region", "x y", "", 5, "A"])},
    )
    return st.recursive(
        leaf,
        lambda inner: st.fixed_dictionaries(
            {},
            optional={
                "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
                "items": inner,
                "allOf": st.lists(inner, max_size=2),
                "$ref": st.just("#/x"),
                "x-mcp-header": st.sampled_from(["Region", "A"]),
                "type": st.just("object"),
            },
        ),
        max_leaves=12,
    )


@PROFILE
@given(schemas())
def test_header_annotation_scan_raises_only_invalid_annotation(rel: Rel, schema: Any) -> None:
    try:
        found = hdr.header_params(schema)
    except hdr.InvalidHeaderAnnotation:
        rel.verified()
        return
    assert len({p.header.lower() for p in found}) == len(found)
    rel.verified()


def test_header_annotation_scan_of_a_deep_schema(rel: Rel) -> None:
    deep: Any = []
    for _ in range(1000):
        deep = [deep]
    with contextlib.suppress(hdr.InvalidHeaderAnnotation):
        hdr.header_params({"type": "object", "allOf": deep})


@PROFILE
@given(st.text(alphabet=string.printable, min_size=1, max_size=200))
def test_header_decoding_work_is_linear(rel: Rel, value: str) -> None:
    once = hdr.encode_header_value(value)
    twice = hdr.encode_header_value(value * 2)
    assert_linear(
        line_events(lambda: hdr.decode_header_value(once)),
        line_events(lambda: hdr.decode_header_value(twice)),
    )
    rel.verified()


# ------------------------------ SSE encoder vs httpx-sse

no_breaks = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\x00"),
    max_size=40,
)


def parse_sse(raw: bytes) -> list[Any]:
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)
    return list(EventSource(response).iter_sse())


@PROFILE
@given(
    data=text,
    event_id=st.none() | no_breaks,
    event=st.none() | no_breaks.filter(bool),
    retry=st.none() | st.integers(0, 10**9),
)
@example(data="a\r\nb\rc\nd", event_id="s1-abc-3", event=None, retry=1000)
@example(data="\n\n", event_id=None, event="message", retry=None)
@example(data="data: injected\n\nevent: evil", event_id=None, event="message", retry=None)
@example(data=" leading", event_id=" x", event=" y", retry=None)
def test_sse_encoding_round_trips_through_httpx_sse(
    rel: Rel, data: str, event_id: str | None, event: str | None, retry: int | None
) -> None:
    raw = encode_event(data.encode(), event_id=event_id, event=event, retry_ms=retry)
    events = parse_sse(raw)
    assert len(events) == 1, (raw, events)
    got = events[0]
    assert got.data == data.replace("\r\n", "\n").replace("\r", "\n")
    assert got.event == (event or "message")
    assert got.id == (event_id or "")
    assert got.retry == retry
    rel.verified()


@PROFILE
@given(json_values)
def test_sse_of_a_codec_payload_is_one_data_line(rel: Rel, value: Any) -> None:
    payload = encode({"jsonrpc": "2.0", "id": 1, "result": {"v": value}})
    raw = encode_event(payload, event_id="s1-x-1")
    # one data line (the payload may itself contain the text "data:": count lines)
    lines = raw.replace(b"\r\n", b"\n").split(b"\n")
    assert sum(line.startswith(b"data:") for line in lines) == 1
    (got,) = parse_sse(raw)
    assert decode(got.data) == decode(payload)
    rel.verified()


@PROFILE
@given(
    st.from_regex(r"\As[0-9]{1,4}-[A-Za-z0-9_-]{6}-[0-9]{1,6}\Z"), st.none() | st.integers(0, 10**6)
)
def test_sse_priming_event_carries_id_and_retry(rel: Rel, event_id: str, retry: int | None) -> None:
    (got,) = parse_sse(priming_event(event_id, retry))
    assert got.id == event_id and got.retry == retry and got.data == ""
    rel.verified()


@PROFILE
@given(text.filter(bool))
def test_sse_encoding_work_is_linear(rel: Rel, data: str) -> None:
    once, twice = data.encode(), (data * 2).encode()
    assert_linear(
        line_events(lambda: encode_event(once, event_id="1")),
        line_events(lambda: encode_event(twice, event_id="1")),
    )
    rel.verified()


# ------------------------------ URI templates

names = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=5)
values = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=10)


@st.composite
def templates_with_values(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    used: set[str] = set()

    def fresh() -> str:
        name = draw(names.filter(lambda n: n not in used))
        used.add(name)
        return name

    parts = [draw(st.sampled_from(["res://", "file:///", "x:"]))]
    expected: dict[str, str] = {}
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["", "/", ".", ";"]))
        name = fresh()
        value = draw(values)
        if parts[-1] not in ("res://", "file:///", "x:") or op == "":
            parts.append("/")
        parts.append("{" + op + name + "}")
        expected[name] = value
        parts.append(draw(st.sampled_from(["", "", "/lit"])))
    rest = None
    if draw(st.booleans()):
        rest = fresh()
        parts.append("/{+" + rest + "}")
        expected[rest] = draw(
            st.text(alphabet=string.ascii_letters + "/", min_size=1, max_size=20).filter(
                lambda v: not v.startswith("/")
            )
        )
    query = draw(st.lists(names.filter(lambda n: n not in used), max_size=2, unique=True))
    for name in query:
        used.add(name)
        expected[name] = draw(st.text(alphabet=string.ascii_letters, max_size=8))
    if query:
        parts.append("{?" + ",".join(query) + "}")
    return "".join(parts), expected


def expand(template: str, values_: dict[str, str]) -> str:
    out = template
    for name, value in values_.items():
        out = out.replace("{" + name + "}", value)
        out = out.replace("{/" + name + "}", "/" + value)
        out = out.replace("{." + name + "}", "." + value)
        out = out.replace("{;" + name + "}", ";" + name + "=" + value)
        out = out.replace("{+" + name + "}", value)
    if "{?" in out:
        start = out.index("{?")
        query_names = out[start + 2 : -1].split(",")
        out = out[:start] + "?" + "&".join(f"{n}={values_[n]}" for n in query_names)
    return out


@PROFILE
@given(templates_with_values())
@example(("res://{id}", {"id": "42"}))
@example(("file:///{+path}", {"path": "a/b/c"}))
def test_uri_template_match_round_trips_an_expansion(
    rel: Rel, case: tuple[str, dict[str, str]]
) -> None:
    template, expected = case
    compiled = UriTemplate.compile(template)
    assert compiled.match(expand(template, expected)) == expected, (
        template,
        expand(template, expected),
    )
    rel.verified()


@PROFILE
@given(st.text(max_size=120))
@example("{")
@example("{a}{a}")
@example("x{?a}y")
@example("{/id*}")
@example("{" + "a," * 300 + "a}")
def test_uri_template_compile_raises_only_template_error(rel: Rel, template: str) -> None:
    with contextlib.suppress(TemplateError):
        UriTemplate.compile(template)
    rel.verified()


TEMPLATES = [
    "item://{id}",
    "files://{+path}",
    "a://{/x}{/y}",
    "a://{x}.{y}{.z}",
    "q://{;p}{?a,b}",
    "frag://{#f}",
    "m://{a}/{b}/{c}/{d}/{e}",
]


@PROFILE
@given(st.sampled_from(TEMPLATES), st.text(max_size=300))
@example("a://{/x}{/y}", "a://" + "/" + "," * 200)
@example("files://{+path}", "files://" + "%" * 250)
def test_uri_template_match_never_raises(rel: Rel, template: str, uri: str) -> None:
    compiled = UriTemplate.compile(template)
    found = compiled.match(uri)
    assert found is None or set(found) <= set(compiled.variables)
    rel.verified()


@PROFILE
@given(st.sampled_from(TEMPLATES), st.text(alphabet="/,.;=?&#%41a", min_size=1, max_size=200))
def test_uri_template_match_work_is_linear(rel: Rel, template: str, uri: str) -> None:
    compiled = UriTemplate.compile(template)
    prefix = template.split("{")[0]
    once, twice = prefix + uri, prefix + uri * 2
    assert_linear(
        line_events(lambda: compiled.match(once)), line_events(lambda: compiled.match(twice))
    )
    rel.verified()


@pytest.mark.parametrize("template", TEMPLATES)
def test_uri_template_hostile_uris_generous_time_bound(rel: Rel, template: str) -> None:
    compiled = UriTemplate.compile(template)
    prefix = template.split("{")[0]
    for body in (
        "/" + "," * 8000,
        "," * 8100,
        "/" * 8100,
        "a" * 8100,
        "%" * 8100,
        "%41" * 2700,
        ";" * 8100,
        ".a" * 4050,
        "?" + "&a=" * 2000,
        "/" + "x/" * 4000,
    ):
        uri = (prefix + body)[:MAX_URI_LENGTH]
        started = time.perf_counter()
        compiled.match(uri)
        compiled.match(prefix + body * 10)  # over the limit: refused at once
        assert time.perf_counter() - started < 0.5, (template, body[:10])
    rel.verified()


# ------------------------------ stdio framing


def reference_lines(data: bytes, max_line: int) -> tuple[list[Any], int]:
    """What LineFramer must produce for ``data``, whatever the chunking."""
    *complete, partial = data.split(b"\n")
    out: list[Any] = []
    for line in complete:
        if len(line) > max_line:
            out.append(("overflow", len(line)))
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip():
            out.append(line)
    return out, (len(partial) if len(partial) <= max_line else 0)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for point in points:
        pieces.append(data[last:point])
        last = point
    pieces.append(data[last:])
    return pieces


frames = st.lists(
    st.binary(max_size=40) | st.sampled_from([b"\n", b"\r\n", b"\r", b" ", b"{}"]), max_size=40
).map(b"".join)


@PROFILE
@given(frames, st.lists(st.integers(0, 2000), max_size=20), st.integers(1, 64))
@example(b"x" * 64 + b"\r\n", [10, 64], 64)
@example(b"abc\r\r\n", [], 5)
def test_line_framer_matches_the_reference_for_any_chunking(
    rel: Rel, data: bytes, cuts: list[int], max_line: int
) -> None:
    framer = LineFramer(max_line)
    got: list[Any] = []
    for piece in chunked(data, cuts):
        for item in framer.feed(piece):
            got.append(("overflow", item.size) if isinstance(item, Overflow) else item)
        assert framer.pending() <= max_line
    expected, pending = reference_lines(data, max_line)
    assert got == expected
    assert framer.pending() == pending
    rel.verified()


@PROFILE
@given(frames.filter(bool), st.integers(1, 16))
def test_line_framer_work_is_linear(rel: Rel, data: bytes, chunk: int) -> None:
    def run(payload: bytes) -> None:
        framer = LineFramer(256)
        for i in range(0, len(payload), chunk):
            framer.feed(payload[i : i + chunk])

    assert_linear(line_events(lambda: run(data)), line_events(lambda: run(data * 2)))
    rel.verified()


def test_line_framer_one_byte_chunks_generous_time_bound(rel: Rel) -> None:
    """256 KiB without a newline, one byte at a time, then 256 KiB of short lines: a
    quadratic buffer (copying the partial line on every chunk) would take minutes."""
    framer = LineFramer()
    started = time.perf_counter()
    for _ in range(256 * 1024):
        framer.feed(b"a")
    assert framer.pending() == 256 * 1024
    lines = framer.feed(b"\n" + b"x\n" * (128 * 1024))
    assert len(lines) == 128 * 1024 + 1
    assert time.perf_counter() - started < 10.0
    rel.verified()


# ------------------------------ Endpoint routing

pending_ids = st.lists(
    st.integers(-5, 5) | st.sampled_from(["1", "0", "a", "", "-1", "01"]),
    min_size=1,
    max_size=6,
    unique_by=lambda v: (type(v), v),
)
feed_ids = (
    st.integers(-6, 6)
    | st.sampled_from(["1", "0", "a", "", "-1", "01", "b"])
    | st.sampled_from([True, False, None, 1.5, 1.0, 2**62])
)


@st.composite
def responses(draw: Any) -> dict[str, Any]:
    rid = draw(feed_ids)
    tag = {"for": rid, "type": type(rid).__name__}
    kind = draw(st.sampled_from(["result", "error", "both", "neither"]))
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0"]))}
    if rid is not None or draw(st.booleans()):
        message["id"] = rid
    if kind in ("result", "both"):
        message["result"] = tag
    if kind in ("error", "both"):
        message["error"] = {
            "code": draw(st.sampled_from([-32000, -32602, 7])),
            "message": "e",
            "data": tag,
        }
    return message


def valid_answer_for(message: dict[str, Any], rid: Any) -> bool:
    """Does ``message`` answer request ``rid`` (exact JSON-RPC id: same type and value)?"""
    if message.get("jsonrpc") != "2.0" or "id" not in message:
        return False
    mid = message["id"]
    if type(mid) is not type(rid) or mid != rid:
        return False
    if ("result" in message) == ("error" in message):
        return False
    return "result" in message or isinstance(message["error"].get("code"), int)


async def _route(ids: list[Any], feed: list[dict[str, Any]], cuts: list[int]) -> dict[Any, Any]:
    sent: list[bytes] = []

    async def write(data: bytes) -> None:
        sent.append(data)

    endpoint = Endpoint(write)
    endpoint.reply_to_invalid = False
    send, receive = anyio.create_memory_object_stream[bytes](math.inf)

    async def chunks() -> AsyncIterator[bytes]:
        async with receive:
            async for chunk in receive:
                yield chunk

    outcomes: dict[Any, Any] = {}

    async def call(rid: Any) -> None:
        try:
            outcomes[(type(rid), rid)] = ("result", await endpoint.request("m", request_id=rid))
        except EndpointClosed:
            outcomes[(type(rid), rid)] = ("closed", None)
        except McpError as err:
            outcomes[(type(rid), rid)] = ("error", err.data)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(endpoint.run, chunks())
            for rid in ids:
                tg.start_soon(call, rid)
            while len(sent) < len(ids):
                await anyio.sleep(0)
            stream = b"".join(encode(m) + b"\n" for m in feed)
            for piece in chunked(stream, cuts):
                send.send_nowait(piece)
            send.close()
    return outcomes


@PROFILE
@given(pending_ids, st.lists(responses(), max_size=25), st.lists(st.integers(0, 5000), max_size=10))
@example(
    [1, "1"],
    [
        {"jsonrpc": "2.0", "id": "1", "result": {"for": "1", "type": "str"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"for": 1, "type": "int"}},
    ],
    [],
)
@example([1], [{"jsonrpc": "2.0", "id": True, "result": {"for": True, "type": "bool"}}], [])
def test_endpoint_never_resolves_a_waiter_with_another_ids_response(
    rel: Rel, ids: list[Any], feed: list[dict[str, Any]], cuts: list[int]
) -> None:
    outcomes = anyio.run(_route, ids, feed, cuts)
    misrouted = 0
    for rid in ids:
        kind, payload = outcomes[(type(rid), rid)]
        first = next((m for m in feed if valid_answer_for(m, rid)), None)
        if first is None:
            ok = kind == "closed"
        elif "result" in first:
            ok = kind == "result" and payload == {"for": rid, "type": type(rid).__name__}
        else:
            ok = kind == "error" and payload == {"for": rid, "type": type(rid).__name__}
        misrouted += not ok
    rel.misrouted(misrouted)
    rel.verified(len(ids))
    assert misrouted == 0, (ids, outcomes)


@pytest.mark.parametrize(
    "line",
    [
        {"jsonrpc": "2.0", "id": {}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": [1], "error": {"code": 1, "message": "x"}},
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": [], "progress": 1},
        },
    ],
    ids=["error-object-id", "error-array-id", "progress-array-token"],
)
def test_endpoint_survives_unhashable_ids(rel: Rel, line: dict[str, Any]) -> None:
    feed = [line, {"jsonrpc": "2.0", "id": 1, "result": {"for": 1, "type": "int"}}]
    outcomes = anyio.run(_route, [1], feed, [])
    assert outcomes[(int, 1)] == ("result", {"for": 1, "type": "int"})


def test_json_module_agrees_with_the_codec_on_framing(rel: Rel) -> None:
    """Sanity for the helpers above: what the test feeds is what the endpoint reads."""
    message = {"jsonrpc": "2.0", "id": "1", "result": {}}
    assert json.loads(encode(message)) == message
    rel.verified()
