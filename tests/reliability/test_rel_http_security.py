"""Plan section 5, group A: HTTP transport security, against ``mcpkit serve --http``.

Every rejection asserts the exact HTTP status and JSON-RPC code, that the tool named in
the rejected body never ran (it would write ``start <tag>`` to the record file), that the
process is still up and that the next valid request succeeds.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from relkit import (
    Reply,
    ServerProcess,
    assert_rpc_error,
    body_of,
    call_tool,
    http_serving,
    hwm_kb,
    next_id,
    post,
    raw_http,
    rss_kb,
    status_of,
)

from support.mcp import modern_headers, modern_request

if TYPE_CHECKING:
    from conftest import Rel

INVALID_REQUEST = -32600
HEADER_MISMATCH = -32020


def tagged_call() -> tuple[str, dict[str, Any]]:
    """A tools/call whose handler leaves a trace when (if) it runs."""
    tag = uuid.uuid4().hex[:12]
    return tag, call_tool(next_id(), "slow", {"tag": tag, "seconds": 0})


def rejected(
    rel: Rel,
    server: ServerProcess,
    client: httpx.Client,
    status: int,
    code: int,
    *,
    tag: str,
    reply: Reply,
    rid: Any = "absent",
) -> None:
    assert_rpc_error(reply, status, code, rid)
    assert not server.ran(tag), f"the handler ran although the request was rejected ({tag})"
    rel.verified()
    http_serving(rel, server, client)


# ------------------------------ A1-A4 Host/Origin


def test_a1_foreign_origin_is_403_before_the_body_is_parsed(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    reply = post(
        client, http_cli.url, message, modern_headers(message, origin="http://evil.example.com")
    )
    rejected(rel, http_cli, client, 403, INVALID_REQUEST, tag=tag, reply=reply)
    # Unparseable body: still 403 (not a -32700), so the body was never read.
    broken = post(
        client,
        http_cli.url,
        None,
        modern_headers(None, origin="http://evil.example.com"),
        raw=b'{"jsonrpc":',
    )
    assert_rpc_error(broken, 403, INVALID_REQUEST)


@pytest.mark.parametrize(
    "host", ["evil.example.com", "evil.example.com:80", "127.0.0.1.evil.com", "localhost.evil.com"]
)
def test_a2_foreign_host_is_403(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, host: str
) -> None:
    """Decision (README): a rejected Host gets 403 + JSON-RPC -32600 (not 421)."""
    tag, message = tagged_call()
    reply = post(client, http_cli.url, message, modern_headers(message, host=host))
    rejected(rel, http_cli, client, 403, INVALID_REQUEST, tag=tag, reply=reply)


@pytest.mark.parametrize(
    "origin",
    [
        "null",
        "http://[::1",
        "file://",
        "chrome-extension://abc",
        "http://evil.example.com:80",
        "https://127.0.0.1.evil.com",
    ],
)
def test_a3_null_or_unparseable_origin_is_403(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, origin: str
) -> None:
    tag, message = tagged_call()
    reply = post(client, http_cli.url, message, modern_headers(message, origin=origin))
    rejected(rel, http_cli, client, 403, INVALID_REQUEST, tag=tag, reply=reply)


@pytest.mark.parametrize(
    "origin", [None, "http://localhost:5173", "http://127.0.0.1", "http://[::1]:8080"]
)
def test_a3_no_origin_or_loopback_origin_is_accepted(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, origin: str | None
) -> None:
    nonce = uuid.uuid4().hex
    message = call_tool(next_id(), "echo", {"nonce": nonce})
    reply = post(client, http_cli.url, message, modern_headers(message, origin=origin))
    assert reply.status == 200 and reply.result["content"][0]["text"] == nonce, reply.describe()
    rel.verified()


@pytest.mark.parametrize(
    "host", ["localhost:80.evil.com", "localhost:abc", "127.0.0.1:80.evil.com"]
)
def test_a4_host_port_must_be_numeric(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, host: str
) -> None:
    tag, message = tagged_call()
    reply = post(client, http_cli.url, message, modern_headers(message, host=host))
    rejected(rel, http_cli, client, 403, INVALID_REQUEST, tag=tag, reply=reply)


def test_a4_origin_port_must_be_numeric(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    reply = post(
        client,
        http_cli.url,
        message,
        modern_headers(message, origin="http://localhost:80.evil.com"),
    )
    rejected(rel, http_cli, client, 403, INVALID_REQUEST, tag=tag, reply=reply)


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "[::1]:9", "LOCALHOST:1"])
def test_a4_loopback_hosts_with_any_numeric_port_are_accepted(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, host: str
) -> None:
    message = call_tool(next_id(), "echo", {"nonce": "h"})
    reply = post(client, http_cli.url, message, modern_headers(message, host=host))
    assert reply.status == 200, reply.describe()
    rel.verified()


# ------------------------------ A6-A7 media types, methods


@pytest.mark.parametrize(
    "ctype",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/html",
    ],
)
def test_a6_cors_simple_content_types_are_415(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, ctype: str
) -> None:
    tag, message = tagged_call()
    reply = post(client, http_cli.url, message, modern_headers(message, content_type=ctype))
    rejected(rel, http_cli, client, 415, INVALID_REQUEST, tag=tag, reply=reply)


@pytest.mark.parametrize(
    "ctype", ["text/plain; charset=json", "application/x-www-form-urlencoded; x=json"]
)
def test_a6_cors_simple_types_with_json_parameter_are_415(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, ctype: str
) -> None:
    tag, message = tagged_call()
    reply = post(client, http_cli.url, message, modern_headers(message, content_type=ctype))
    rejected(rel, http_cli, client, 415, INVALID_REQUEST, tag=tag, reply=reply)


def test_a6_listen_without_sse_accept_is_406(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    message = modern_request(
        next_id(), "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    reply = post(client, http_cli.url, message, modern_headers(message, accept="application/json"))
    assert_rpc_error(reply, 406, INVALID_REQUEST, message["id"])
    http_serving(rel, http_cli, client)


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH"])
def test_a7_other_methods_without_a_session_are_405(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, method: str
) -> None:
    response = client.request(method, http_cli.url, headers={"accept": "text/event-stream"})
    assert response.status_code == 405, response.text
    assert "POST" in response.headers["allow"]
    assert response.json()["error"]["code"] == INVALID_REQUEST
    http_serving(rel, http_cli, client)


def test_a7_modern_only_server_answers_get_and_delete_405_allow_post(
    rel: Rel, workdir: Path, client: httpx.Client
) -> None:
    server = ServerProcess.cli(workdir, "--no-legacy")
    try:
        for method in ("GET", "DELETE"):
            response = client.request(
                method, server.url, headers={"mcp-session-id": "abc", "accept": "text/event-stream"}
            )
            assert response.status_code == 405 and response.headers["allow"] == "POST"
            assert response.json()["error"]["code"] == INVALID_REQUEST
        http_serving(rel, server, client)
    finally:
        server.stop()


# ------------------------------ A8-A10 sizes and framing


def test_a8_declared_oversized_body_is_413_before_reading(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5242880\r\n\r\n"
    )
    raw, _ = raw_http(http_cli.port, head + b'{"jsonrpc":"2.0"', timeout=3)
    assert status_of(raw) == 413, raw[:300]
    assert json.loads(body_of(raw))["error"]["code"] == INVALID_REQUEST
    http_serving(rel, http_cli, client)


def test_a8_streamed_oversized_body_is_413_with_bounded_memory(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    limit = 4 * 1024 * 1024
    before = rss_kb(http_cli.pid)

    def chunks() -> Iterator[bytes]:
        piece = b"x" * 16384
        for _ in range(limit // len(piece) + 64):
            yield piece

    _, message = tagged_call()
    response = client.post(http_cli.url, content=chunks(), headers=modern_headers(message))
    assert response.status_code == 413, response.text[:300]
    assert response.json()["error"]["code"] == INVALID_REQUEST
    growth = hwm_kb(http_cli.pid) - before
    assert growth < 2 * limit // 1024, f"peak RSS grew {growth} KiB for a {limit} byte limit"
    http_serving(rel, http_cli, client)


def test_a8_one_byte_chunks_hit_the_limit(rel: Rel, workdir: Path, client: httpx.Client) -> None:
    """Chunked transfer, one byte per chunk, against a 4 KiB limit: 413 at the limit."""
    server = ServerProcess.launcher(workdir, "--max-body", "4096")
    try:
        body = b"".join(b"1\r\nx\r\n" for _ in range(5000)) + b"0\r\n\r\n"
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        raw, _ = raw_http(server.port, head + body, timeout=5)
        assert status_of(raw) == 413, raw[:300]
        http_serving(rel, server, client)
    finally:
        server.stop()


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: abc\r\n",
        b"Content-Length: -1\r\n",
        b"Content-Length: 2\r\nContent-Length: 3\r\n",
        b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: chunked, identity\r\n",
    ],
    ids=["cl-not-a-number", "cl-negative", "cl-duplicate", "cl-and-te", "te-not-chunked-last"],
)
def test_a9_bad_framing_is_400_and_closes(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, framing: bytes
) -> None:
    tag = uuid.uuid4().hex[:12]
    body = json.dumps(call_tool(1, "slow", {"tag": tag, "seconds": 0})).encode()
    data = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + framing
        + b"\r\n"
        + body
    )
    raw, closed = raw_http(http_cli.port, data, timeout=3)
    assert status_of(raw) == 400, raw[:300]
    assert closed, "the connection stays open after a framing error"
    assert not http_cli.ran(tag)
    http_serving(rel, http_cli, client)


@pytest.mark.parametrize(
    "headers",
    [b"X-Big: " + b"a" * 20000 + b"\r\n", b"".join(b"X-H%d: v\r\n" % i for i in range(200))],
    ids=["20KiB-header", "200-headers"],
)
def test_a10_oversized_headers_are_rejected_and_closed(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client, headers: bytes
) -> None:
    tag = uuid.uuid4().hex[:12]
    message = call_tool(1, "slow", {"tag": tag, "seconds": 0})
    body = json.dumps(message).encode()
    lines = b"".join(f"{k}: {v}\r\n".encode() for k, v in modern_headers(message).items())
    data = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + lines
        + headers
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    raw, closed = raw_http(http_cli.port, data, timeout=3)
    assert status_of(raw) in (400, 431), raw[:300]
    assert closed
    assert not http_cli.ran(tag)
    http_serving(rel, http_cli, client)


# ------------------------------ A11-A12 MCP headers


def test_a11_method_header_differs_from_body(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    reply = post(client, http_cli.url, message, modern_headers(message, mcp_method="tools/list"))
    rejected(rel, http_cli, client, 400, HEADER_MISMATCH, tag=tag, reply=reply, rid=message["id"])


def test_a11_two_method_headers_are_refused(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    headers = modern_headers(message, mcp_method=None)
    pairs = [*headers.items(), ("mcp-method", "tools/list"), ("mcp-method", "tools/call")]
    reply = post(client, http_cli.url, message, pairs)  # type: ignore[arg-type]
    rejected(rel, http_cli, client, 400, HEADER_MISMATCH, tag=tag, reply=reply, rid=message["id"])


def test_a11_raw_non_ascii_name_header_is_refused(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    body = json.dumps(message).encode()
    lines = b"".join(
        f"{k}: {v}\r\n".encode() for k, v in modern_headers(message, mcp_name=None).items()
    )
    data = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + lines
        + b"Mcp-Name: sl\xc3\xb6w\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    raw, _ = raw_http(http_cli.port, data, timeout=3)
    assert status_of(raw) == 400, raw[:300]
    reply = json.loads(body_of(raw))
    assert reply["error"]["code"] == HEADER_MISMATCH and reply["id"] == message["id"]
    assert not http_cli.ran(tag)
    http_serving(rel, http_cli, client)


def test_a11_cr_in_name_header_is_refused_at_http_level(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    body = json.dumps(message).encode()
    lines = b"".join(
        f"{k}: {v}\r\n".encode() for k, v in modern_headers(message, mcp_name=None).items()
    )
    data = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + lines
        + b"Mcp-Name: sl\row\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    raw, closed = raw_http(http_cli.port, data, timeout=3)
    assert status_of(raw) == 400 and closed, raw[:300]
    assert not http_cli.ran(tag)
    http_serving(rel, http_cli, client)


def test_a11_surrounding_whitespace_in_name_header_is_accepted(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    """HTTP optional whitespace around a value is not part of it (RFC 9110 5.5)."""
    message = call_tool(next_id(), "echo", {"nonce": "ws"})
    body = json.dumps(message).encode()
    lines = b"".join(
        f"{k}: {v}\r\n".encode() for k, v in modern_headers(message, mcp_name=None).items()
    )
    data = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + lines
        + b"Mcp-Name:   echo \t \r\n"
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    raw, _ = raw_http(http_cli.port, data, timeout=3)
    assert status_of(raw) == 200, raw[:300]
    assert json.loads(body_of(raw))["result"]["content"][0]["text"] == "ws"
    rel.verified()


def test_a11_base64_name_header_is_decoded(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    message = call_tool(next_id(), "echo", {"nonce": "b64"})
    reply = post(
        client, http_cli.url, message, modern_headers(message, mcp_name="=?base64?ZWNobw==?=")
    )
    assert reply.status == 200, reply.describe()
    broken = post(client, http_cli.url, message, modern_headers(message, mcp_name="=?base64?!!!?="))
    assert_rpc_error(broken, 400, HEADER_MISMATCH, message["id"])
    rel.verified(2)


def test_a12_unsupported_future_version_is_32022_with_supported(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag = uuid.uuid4().hex[:12]
    message = call_tool(next_id(), "slow", {"tag": tag, "seconds": 0}, version="2099-01-01")
    reply = post(
        client, http_cli.url, message, modern_headers(message, mcp_protocol_version="2099-01-01")
    )
    rejected(rel, http_cli, client, 400, -32022, tag=tag, reply=reply, rid=message["id"])
    assert reply.error["data"] == {"supported": ["2026-07-28"], "requested": "2099-01-01"}


def test_a12_old_unknown_version_header_is_400(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    """Decision (README): an unknown version older than 2025-11-25 goes to the legacy path,
    which answers 400 / -32600 (the 2025 rule: invalid MCP-Protocol-Version -> 400)."""
    tag = uuid.uuid4().hex[:12]
    message = {
        "jsonrpc": "2.0",
        "id": next_id(),
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": tag, "seconds": 0}},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "1999-01-01",
    }
    reply = post(client, http_cli.url, message, headers)
    rejected(rel, http_cli, client, 400, INVALID_REQUEST, tag=tag, reply=reply, rid=message["id"])


def test_a12_version_header_differs_from_meta(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    reply = post(client, http_cli.url, message, modern_headers(message))
    rejected(rel, http_cli, client, 400, HEADER_MISMATCH, tag=tag, reply=reply, rid=message["id"])


def test_a12_missing_version_header_on_a_modern_body(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    tag, message = tagged_call()
    reply = post(client, http_cli.url, message, modern_headers(message, mcp_protocol_version=None))
    rejected(rel, http_cli, client, 400, HEADER_MISMATCH, tag=tag, reply=reply, rid=message["id"])


def test_a12_missing_method_or_name_header(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    for drop in ("mcp_method", "mcp_name"):
        tag, message = tagged_call()
        reply = post(client, http_cli.url, message, modern_headers(message, **{drop: None}))
        rejected(
            rel, http_cli, client, 400, HEADER_MISMATCH, tag=tag, reply=reply, rid=message["id"]
        )


def test_unknown_path_is_404_json(rel: Rel, http_cli: ServerProcess, client: httpx.Client) -> None:
    response = client.post(
        http_cli.url.replace("/mcp", "/other"),
        content=b"{}",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == INVALID_REQUEST
    http_serving(rel, http_cli, client)


def test_rejections_are_not_echoed_raw_into_the_log(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    """Hostile header values and bodies never reach the server log verbatim."""
    marker = "\x1b[31mEVIL-" + uuid.uuid4().hex
    message = call_tool(next_id(), "echo", {"nonce": "x"})
    post(client, http_cli.url, message, modern_headers(message, origin="http://evil.example.com"))
    post(client, http_cli.url, None, modern_headers(None), raw=('{"jsonrpc":' + marker).encode())
    assert "\x1b[31m" not in http_cli.log_text()
    http_serving(rel, http_cli, client)


def test_a12_old_unknown_version_in_meta_is_32022(
    rel: Rel, http_cli: ServerProcess, client: httpx.Client
) -> None:
    """A request that names its version in ``_meta`` is a modern one whatever the version:
    an unknown one (even older than 2025-11-25) is -32022 with the supported list."""
    tag = uuid.uuid4().hex[:12]
    message = call_tool(next_id(), "slow", {"tag": tag, "seconds": 0}, version="1999-01-01")
    reply = post(
        client, http_cli.url, message, modern_headers(message, mcp_protocol_version="1999-01-01")
    )
    rejected(rel, http_cli, client, 400, -32022, tag=tag, reply=reply, rid=message["id"])
    assert reply.error["data"] == {"supported": ["2026-07-28"], "requested": "1999-01-01"}
