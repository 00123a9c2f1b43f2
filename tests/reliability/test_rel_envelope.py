"""Plan section 5, group C: the JSON-RPC envelope, on Streamable HTTP and on stdio.

The same hostile bodies go to ``mcpkit serve --http`` (modern headers) and, as lines, to
``mcpkit serve`` over stdio.  Each must get the exact JSON-RPC code (and HTTP status), the
right id (none when it cannot be known), no handler may run, and the next valid request
must succeed in the same process.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from relkit import (
    ServerProcess,
    StdioProcess,
    assert_rpc_error,
    call_tool,
    http_serving,
    hwm_kb,
    next_id,
    post,
    rss_kb,
    stdio_serving,
)

from support.mcp import modern_headers, modern_request

if TYPE_CHECKING:
    from conftest import Rel

PARSE, INVALID, NOT_FOUND, PARAMS, INTERNAL = -32700, -32600, -32601, -32602, -32603

TAG = "TAGX"  # replaced per case with a unique tag


def _call(rid: Any = 7) -> str:
    return json.dumps(call_tool(rid, "slow", {"tag": TAG, "seconds": 0}))


def _deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


#: (case id, raw body, expected code, expected id ("absent" = no id member), HTTP status)
CASES: list[tuple[str, bytes, int, Any, int]] = [
    ("c1-truncated", b'{"jsonrpc":', PARSE, "absent", 400),
    ("c1-garbage", b"hello", PARSE, "absent", 400),
    ("c2-empty-batch", b"[]", INVALID, "absent", 400),
    ("c2-batch-of-one", ("[" + _call() + "]").encode(), INVALID, "absent", 400),
    ("c2-batch-of-two", ("[" + _call(1) + "," + _call(2) + "]").encode(), INVALID, "absent", 400),
    (
        "c3-method-not-a-string",
        b'{"jsonrpc":"2.0","method":1,"params":"bar"}',
        INVALID,
        "absent",
        400,
    ),
    ("c3-no-jsonrpc", _call().replace('"jsonrpc": "2.0", ', "").encode(), INVALID, 7, 400),
    ("c3-jsonrpc-1.0", _call().replace('"2.0"', '"1.0"').encode(), INVALID, 7, 400),
    ("c3-empty-method", b'{"jsonrpc":"2.0","id":7,"method":""}', INVALID, 7, 400),
    ("c3-neither-method-nor-result", b'{"jsonrpc":"2.0","id":7}', INVALID, 7, 400),
    ("c4-id-null", _call().replace('"id": 7', '"id": null').encode(), INVALID, "absent", 400),
    ("c4-id-fraction", _call().replace('"id": 7', '"id": 1.5').encode(), INVALID, "absent", 400),
    ("c4-id-true", _call().replace('"id": 7', '"id": true').encode(), INVALID, "absent", 400),
    ("c4-id-object", _call().replace('"id": 7', '"id": {}').encode(), INVALID, "absent", 400),
    ("c4-id-array", _call().replace('"id": 7', '"id": [7]').encode(), INVALID, "absent", 400),
    (
        "c5-params-number",
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":5}',
        INVALID,
        7,
        400,
    ),
    (
        "c5-params-array",
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}',
        INVALID,
        7,
        400,
    ),
    (
        "c5-params-string",
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}',
        INVALID,
        7,
        400,
    ),
    ("c10-nested-100k", _deep(100_000), PARSE, "absent", 400),
    ("c10-nested-object-2k", b'{"a":' * 2000 + b"1" + b"}" * 2000, PARSE, "absent", 400),
    (
        "c10-5000-digit-integer",
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"x"}',
        PARSE,
        "absent",
        400,
    ),
    ("c11-invalid-utf8", b"\xff\xfe", PARSE, "absent", 400),
    (
        "c11-invalid-utf8-in-string",
        _call().replace(TAG, "\x00").encode().replace(b"\\u0000", b"\xc3\x28"),
        PARSE,
        "absent",
        400,
    ),
    ("c12-lone-surrogate-escape", _call().replace(TAG, "\\ud800").encode(), PARSE, "absent", 400),
    (
        "c12-encoded-surrogate-bytes",
        _call().encode().replace(TAG.encode(), b"\xed\xa0\x80"),
        PARSE,
        "absent",
        400,
    ),
    ("c13-nan", _call().replace('"seconds": 0', '"seconds": NaN').encode(), PARSE, "absent", 400),
    (
        "c13-infinity",
        _call().replace('"seconds": 0', '"seconds": Infinity').encode(),
        PARSE,
        "absent",
        400,
    ),
    ("c13-comment", ("/* hi */" + _call()).encode(), PARSE, "absent", 400),
    ("c13-bom", b"\xef\xbb\xbf" + _call().encode(), PARSE, "absent", 400),
    ("c13-trailing-comma", _call()[:-1].encode() + b",}", PARSE, "absent", 400),
    ("c13-single-quotes", b"{'jsonrpc':'2.0','id':7,'method':'tools/list'}", PARSE, "absent", 400),
    ("c13-two-documents", (_call() + _call()).encode(), PARSE, "absent", 400),
]


def _materialize(raw: bytes) -> tuple[bytes, str]:
    tag = uuid.uuid4().hex[:12]
    return raw.replace(TAG.encode(), tag.encode()), tag


# ------------------------------ fixtures


@pytest.fixture(scope="module")
def stdio_shared(workdir: Path) -> Iterator[StdioProcess]:
    proc = StdioProcess(workdir)
    try:
        yield proc
    finally:
        proc.kill()


def assert_stdio_error(message: dict[str, Any], code: int, rid: Any) -> None:
    assert message.get("jsonrpc") == "2.0" and message["error"]["code"] == code, message
    if rid == "absent":
        assert "id" not in message, message
    else:
        assert message["id"] == rid and type(message["id"]) is type(rid), message


# ------------------------------ the table, both transports


@pytest.mark.parametrize(("case", "raw", "code", "rid", "status"), CASES, ids=[c[0] for c in CASES])
def test_envelope_http(
    rel: Rel,
    http_cli: ServerProcess,
    client: httpx.Client,
    case: str,
    raw: bytes,
    code: int,
    rid: Any,
    status: int,
) -> None:
    body, tag = _materialize(raw)
    headers = modern_headers(call_tool(7, "slow"))
    reply = post(client, http_cli.url, None, headers, raw=body)
    assert_rpc_error(reply, status, code, rid)
    assert not any(line.endswith(" " + tag) for line in http_cli.records()), "a handler ran"
    rel.verified()
    http_serving(rel, http_cli, client)


@pytest.mark.parametrize(("case", "raw", "code", "rid", "status"), CASES, ids=[c[0] for c in CASES])
def test_envelope_stdio(
    rel: Rel, stdio_shared: StdioProcess, case: str, raw: bytes, code: int, rid: Any, status: int
) -> None:
    body, tag = _materialize(raw)
    stdio_shared.send_raw(body + b"\n")
    assert_stdio_error(stdio_shared.recv(), code, rid)
    assert not any(line.endswith(" " + tag) for line in stdio_shared.records()), "a handler ran"
    rel.verified()
    stdio_serving(rel, stdio_shared)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_c13_duplicate_keys_are_invalid_request(
    rel: Rel,
    http_cli: ServerProcess,
    stdio_shared: StdioProcess,
    client: httpx.Client,
    transport: str,
) -> None:
    tag = uuid.uuid4().hex[:12]
    body = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/call","params":'
        b'{"name":"slow","arguments":{"tag":"'
        + tag.encode()
        + b'","seconds":0},"_meta":'
        + json.dumps(modern_request(1, "x")["params"]["_meta"]).encode()
        + b"}}"
    )
    # An object with a repeated member is ambiguous as a whole (the id itself could be the
    # repeated member), so the error carries no id.
    if transport == "http":
        reply = post(client, http_cli.url, None, modern_headers(call_tool(7, "slow")), raw=body)
        assert_rpc_error(reply, 400, INVALID)
        records = http_cli.records()
    else:
        stdio_shared.send_raw(body + b"\n")
        assert_stdio_error(stdio_shared.recv(), INVALID, "absent")
        records = stdio_shared.records()
    assert not any(line.endswith(" " + tag) for line in records)


def test_c1_crlf_framing_and_blank_lines_on_stdio(rel: Rel, stdio_shared: StdioProcess) -> None:
    rid = next_id()
    stdio_shared.send_raw(
        b"\r\n\n   \n" + json.dumps(call_tool(rid, "echo", {"nonce": "crlf"})).encode() + b"\r\n"
    )
    answer, before = stdio_shared.recv_response(rid)
    assert before == [] and answer["result"]["content"][0]["text"] == "crlf"
    rel.verified()


# ------------------------------ C4-C7 ids, params, notifications


def test_c4_string_and_integer_ids_are_distinct(
    rel: Rel, http_cli: ServerProcess, stdio_shared: StdioProcess, client: httpx.Client
) -> None:
    for rid in ("1", 1, "01", 0, -5, "", "x" * 200):
        reply = post(client, http_cli.url, call_tool(rid, "echo", {"nonce": repr(rid)}))
        assert reply.body["id"] == rid and type(reply.body["id"]) is type(rid)
        assert reply.result["content"][0]["text"] == repr(rid)
    # On stdio both are in flight at once and each gets its own answer.
    stdio_shared.send(call_tool("1", "nap_echo", {"nonce": "string", "seconds": 0.2}))
    stdio_shared.send(call_tool(1, "nap_echo", {"nonce": "integer", "seconds": 0.1}))
    got = {}
    for _ in range(2):
        message = stdio_shared.recv()
        got[(type(message["id"]).__name__, message["id"])] = message["result"]["content"][0]["text"]
    assert got == {("int", 1): "integer", ("str", "1"): "string"}
    rel.verified(9)


def test_c5_schema_invalid_params_and_unknown_methods(
    rel: Rel, http_cli: ServerProcess, stdio_shared: StdioProcess, client: httpx.Client
) -> None:
    bad = modern_request(next_id(), "tools/call", {"name": "echo", "arguments": [1]})
    assert_rpc_error(post(client, http_cli.url, bad), 400, PARAMS, bad["id"])
    bad_prompt = modern_request(next_id(), "prompts/get", {"name": "hello", "arguments": 5})
    assert_rpc_error(post(client, http_cli.url, bad_prompt), 400, PARAMS, bad_prompt["id"])
    nameless = modern_request(next_id(), "tools/call", {"arguments": {}})
    assert_stdio_error(stdio_shared.request(nameless), PARAMS, nameless["id"])
    unknown_tool = call_tool(next_id(), "no_such_tool")
    assert_rpc_error(post(client, http_cli.url, unknown_tool), 400, PARAMS, unknown_tool["id"])
    unknown = modern_request(next_id(), "tools/explode")
    assert_rpc_error(post(client, http_cli.url, unknown), 404, NOT_FOUND, unknown["id"])
    legacy_only = modern_request(next_id(), "ping")
    assert_rpc_error(post(client, http_cli.url, legacy_only), 404, NOT_FOUND, legacy_only["id"])
    no_meta = {
        "jsonrpc": "2.0",
        "id": next_id(),
        "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }
    assert_rpc_error(post(client, http_cli.url, no_meta), 400, PARAMS, no_meta["id"])
    for message, code in ((unknown_tool, PARAMS), (unknown, NOT_FOUND)):
        rid = next_id()
        assert_stdio_error(stdio_shared.request({**message, "id": rid}), code, rid)
    # tool argument validation errors are tool results (isError), not protocol errors
    wrong = call_tool(next_id(), "echo", {"nonce": 5})
    result = post(client, http_cli.url, wrong).result
    assert result["isError"] is True
    rel.verified(8)
    http_serving(rel, http_cli, client)
    stdio_serving(rel, stdio_shared)


@pytest.mark.parametrize(
    "note",
    [
        {"jsonrpc": "2.0", "method": "notifications/made_up"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 424242}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "nope"}},
        {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"tag": TAG}},
        },
    ],
    ids=[
        "unknown-method",
        "cancel-bad-id",
        "cancel-unknown-id",
        "progress-unknown-token",
        "call-without-id",
    ],
)
def test_c6_notifications_never_get_a_response(
    rel: Rel,
    http_cli: ServerProcess,
    stdio_shared: StdioProcess,
    client: httpx.Client,
    note: dict[str, Any],
) -> None:
    tag = uuid.uuid4().hex[:12]
    note = json.loads(json.dumps(note).replace(TAG, tag))
    response = client.post(http_cli.url, content=json.dumps(note), headers=modern_headers(note))
    assert response.status_code == 202 and response.content == b"", response.text
    stdio_shared.send(note)
    assert stdio_shared.quiet(0.3) == []
    assert not any(line.endswith(" " + tag) for line in http_cli.records() + stdio_shared.records())
    rel.verified(2)
    http_serving(rel, http_cli, client)
    stdio_serving(rel, stdio_shared)


@pytest.mark.parametrize("token", [[1], {}])
def test_c6_progress_with_an_unhashable_token_is_ignored(
    rel: Rel, stdio: StdioProcess, token: Any
) -> None:
    stdio.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1},
        }
    )
    assert stdio.quiet(0.3) == []
    stdio_serving(rel, stdio)


@pytest.mark.parametrize("rid", [{}, [1]], ids=["object", "array"])
def test_c4_error_response_with_an_unhashable_id_on_stdio(
    rel: Rel, stdio: StdioProcess, rid: Any
) -> None:
    """A legacy session with an elicitation pending; the client answers garbage first."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    assert "result" in stdio.request(init)
    stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    stdio.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}})
    ask = stdio.recv()
    assert ask["method"] == "elicitation/create", ask
    stdio.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "x"}})
    try:
        stdio.send(
            {
                "jsonrpc": "2.0",
                "id": ask["id"],
                "result": {"action": "accept", "content": {"word": "ok"}},
            }
        )
        answer, _ = stdio.recv_response(2, timeout=5)
        assert answer["result"]["content"][0]["text"] == "word=ok"
    except (AssertionError, OSError):
        rel.alive(stdio, grace=2)
        raise


def test_c7_client_response_on_the_modern_path_is_400(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    for message in (
        {"jsonrpc": "2.0", "id": 5, "result": {}},
        {"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "x"}},
    ):
        reply = post(client, http_cli.url, message, modern_headers(None))
        assert_rpc_error(reply, 400, INVALID)
    rel.verified(2)
    http_serving(rel, http_cli, client)


# ------------------------------ C8 duplicate in-flight id (stdio)


def test_c8_duplicate_in_flight_id_on_stdio(rel: Rel, stdio_shared: StdioProcess) -> None:
    rid = next_id()
    tag = uuid.uuid4().hex[:12]
    stdio_shared.send(call_tool(rid, "slow", {"tag": tag, "seconds": 0.4}))
    assert _wait_record(stdio_shared, f"start {tag}")
    stdio_shared.send(call_tool(rid, "echo", {"nonce": "dup"}))
    first = stdio_shared.recv()
    assert_stdio_error(first, INVALID, rid)
    second = stdio_shared.recv(5)
    assert second["id"] == rid and second["result"]["content"][0]["text"] == f"done {tag}"
    assert stdio_shared.quiet(0.2) == []
    rel.verified(2)


def _wait_record(proc: Any, line: str, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if line in proc.records():
            return True
        time.sleep(0.01)
    return False


# ------------------------------ C9 second initialize (stdio)


def test_c9_second_initialize_is_refused_and_changes_nothing(rel: Rel, tmp_path: Path) -> None:
    proc = StdioProcess(tmp_path)
    try:
        init: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        first = proc.request(init)
        assert first["result"]["protocolVersion"] == "2025-06-18"
        proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        again = proc.request(
            {**init, "id": 2, "params": {**init["params"], "protocolVersion": "2025-11-25"}}
        )
        assert_stdio_error(again, INVALID, 2)
        # Still the 2025-06-18 session: an elicitation request would carry no "mode" (2025-11-25
        # added it); simplest observable: the session keeps answering legacy requests.
        assert proc.request({"jsonrpc": "2.0", "id": 3, "method": "ping"})["result"] == {}
        rel.verified(3)
        stdio_serving(rel, proc)
    finally:
        proc.kill()


# ------------------------------ C14 sizes


def test_c14_unknown_top_level_members_are_ignored(
    rel: Rel, http_cli: ServerProcess, stdio_shared: StdioProcess, client: httpx.Client
) -> None:
    message = {
        **call_tool(next_id(), "echo", {"nonce": "extra"}),
        "extra": {"a": [1, 2]},
        "x-y": None,
    }
    reply = post(client, http_cli.url, message)
    assert reply.result["content"][0]["text"] == "extra"
    message["id"] = next_id()
    assert stdio_shared.request(message)["result"]["content"][0]["text"] == "extra"
    rel.verified(2)


def test_c14_large_payload_under_the_limit_is_processed_with_bounded_memory(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    payload = "p" * (3_900_000)
    message = call_tool(next_id(), "size", {"data": payload})
    before = rss_kb(http_cli.pid)
    reply = post(client, http_cli.url, message)
    assert reply.status == 200 and reply.result["content"][0]["text"] == "3900000", reply.describe()
    growth_kb = hwm_kb(http_cli.pid) - before
    assert growth_kb < 4 * len(payload) // 1024, f"peak RSS grew {growth_kb} KiB"
    rel.verified()
    http_serving(rel, http_cli, client)


# ------------------------------ C15 URI templates


@pytest.mark.parametrize(
    "uri",
    [
        "item://" + "a" * 70_000,
        "item://" + "," * 10_000,
        "files://" + "/" + "," * 10_000,
        "files://" + "/" * 70_000,
        "note://fixed" + "?" * 70_000,
    ],
    ids=["65k-plain", "commas-10k", "slash-commas-10k", "slashes-70k", "query-70k"],
)
def test_c15_hostile_resource_uris_are_rejected_fast(
    rel: Rel, stdio_shared: StdioProcess, uri: str
) -> None:
    rid = next_id()
    started = time.monotonic()
    answer = stdio_shared.request(modern_request(rid, "resources/read", {"uri": uri}))
    elapsed = time.monotonic() - started
    assert_stdio_error(answer, PARAMS, rid)
    assert elapsed < 2.0, f"{elapsed:.2f}s for a {len(uri)} character URI"
    rel.verified()
    stdio_serving(rel, stdio_shared)


# ------------------------------ C16 deep structures in replies


def _deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_c16_deep_value_echoed_in_an_error_http_legacy(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    """The modern path refuses it at the Mcp-Name check; a legacy session reaches the handler."""
    session = legacy_session(client, http_cli.url)
    message = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "prompts/get",
        "params": {"name": _deep_list(300)},
    }
    response = client.post(
        http_cli.url,
        content=json.dumps(message),
        headers={**LEGACY_HEADERS, "mcp-session-id": session},
    )
    try:
        assert response.headers.get("content-type", "").startswith("application/json"), (
            response.text
        )
        assert response.json()["error"]["code"] in (PARAMS, INTERNAL)
    finally:
        http_serving(rel, http_cli, client)


LEGACY_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def legacy_session(client: httpx.Client, url: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    response = client.post(url, content=json.dumps(init), headers=LEGACY_HEADERS)
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    client.post(
        url, content=json.dumps(note), headers={**LEGACY_HEADERS, "mcp-session-id": session}
    )
    return session


def test_c16_deep_value_echoed_in_an_error_stdio(rel: Rel, stdio: StdioProcess) -> None:
    rid = next_id()
    stdio.send(modern_request(rid, "prompts/get", {"name": _deep_list(300)}))
    try:
        answer = stdio.recv(5)
        assert answer["id"] == rid and "error" in answer
    finally:
        stdio_serving(rel, stdio)


def test_c16_deep_tool_result_http(rel: Rel, http_cli: ServerProcess, client: httpx.Client) -> None:
    message = call_tool(next_id(), "deep", {"depth": 300})
    reply = post(client, http_cli.url, message)
    try:
        assert reply.body is not None and reply.error["code"] == INTERNAL, reply.describe()
    finally:
        http_serving(rel, http_cli, client)


def test_c16_deep_tool_result_stdio(rel: Rel, stdio: StdioProcess) -> None:
    rid = next_id()
    stdio.send(call_tool(rid, "deep", {"depth": 300}))
    try:
        answer = stdio.recv(5)
        assert answer["id"] == rid and answer["error"]["code"] == INTERNAL
    finally:
        stdio_serving(rel, stdio)


def test_c16_deep_arguments_are_answered(
    rel: Rel, http_cli: ServerProcess, stdio_shared: StdioProcess, client: httpx.Client
) -> None:
    """1,000-deep arguments (under the parser's limit) to a typed tool: a tool error."""
    rid = next_id()
    template = json.dumps(call_tool(rid, "echo", {"nonce": "NONCE"}))
    body = template.replace('"NONCE"', "[" * 1000 + "]" * 1000).encode()
    reply = post(client, http_cli.url, None, modern_headers(call_tool(rid, "echo")), raw=body)
    assert reply.status == 200 and reply.result["isError"] is True, reply.describe()
    stdio_shared.send_raw(body + b"\n")
    answer, _ = stdio_shared.recv_response(rid)
    assert answer["result"]["isError"] is True
    rel.verified(2)
    http_serving(rel, http_cli, client)
    stdio_serving(rel, stdio_shared)


# ------------------------------ C12 output re-encoding


def test_c12_surrogate_in_a_tool_result_http(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    message = call_tool(next_id(), "weird_name")
    reply = post(client, http_cli.url, message)
    try:
        assert reply.body is not None and reply.body["id"] == message["id"], reply.describe()
    finally:
        http_serving(rel, http_cli, client)


def test_c12_surrogate_in_a_tool_result_stdio(rel: Rel, stdio: StdioProcess) -> None:
    rid = next_id()
    stdio.send(call_tool(rid, "weird_name"))
    try:
        answer = stdio.recv(5)
        assert answer["id"] == rid
    finally:
        stdio_serving(rel, stdio)
