"""Building client messages and reading server replies, for transport and framework tests.

Written independently of mcpkit's own helpers on purpose: a test that built its headers or
parsed its SSE with the code under test would agree with any bug in it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from support.schema import LEGACY, MODERN, validate_outgoing

CLIENT_INFO = {"name": "mcpkit-tests", "version": "0.0.1"}
ACCEPT_BOTH = "application/json, text/event-stream"

#: Params member mirrored in the Mcp-Name header (2026-07-28 Streamable HTTP; the tasks
#: extension names the task).
NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def modern_meta(
    capabilities: dict[str, Any] | None = None, version: str = MODERN, **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    meta.update(extra)
    return meta


def modern_request(
    request_id: int | str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    version: str = MODERN,
    **meta_extra: Any,
) -> dict[str, Any]:
    body = dict(params or {})
    body["_meta"] = modern_meta(capabilities, version, **meta_extra)
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def legacy_request(
    request_id: int | str, method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize_request(
    request_id: int | str = 0,
    version: str = LEGACY,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return legacy_request(
        request_id,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": CLIENT_INFO,
        },
    )


def b64_sentinel(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def header_text(value: str) -> str:
    """Header form of a body string (base64 sentinel unless plain visible ASCII)."""
    plain = (
        value == value.strip()
        and all(0x20 <= ord(ch) <= 0x7E for ch in value)
        and not (value.startswith("=?base64?") and value.endswith("?="))
    )
    return value if plain else b64_sentinel(value)


def modern_headers(message: dict[str, Any] | None, **overrides: str | None) -> dict[str, str]:
    """The headers a correct 2026-07-28 client sends with ``message`` (None: a body that is
    not a request, only the constant headers).

    ``overrides`` replace (or, with None, drop) headers, whatever their case; names use
    ``_`` for ``-``.
    """
    headers = {
        "Accept": ACCEPT_BOTH,
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
    }
    message = message or {}
    method = message.get("method")
    if "id" in message and isinstance(method, str):
        headers["Mcp-Method"] = method
        member = NAME_PARAM.get(method)
        params = message.get("params") or {}
        if member is not None and isinstance(params.get(member), str):
            headers["Mcp-Name"] = header_text(params[member])
    for key, value in overrides.items():
        name = key.replace("_", "-")
        for existing in [h for h in headers if h.lower() == name.lower()]:
            del headers[existing]
        if value is not None:
            headers[name] = value
    return headers


# --------------------------------------------------------------------------- SSE


@dataclass
class SseEvent:
    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None


def parse_sse(text: str) -> list[SseEvent]:
    """Events of a complete SSE body (comments skipped; events without data kept)."""
    return list(iter_sse(text.splitlines()))


def iter_sse(lines: Iterable[str]) -> Iterator[SseEvent]:
    data: list[str] = []
    event: str | None = None
    event_id: str | None = None
    retry: int | None = None
    seen = False
    for raw in lines:
        line = raw.rstrip("\r")
        if line == "":
            if seen:
                yield SseEvent("\n".join(data), event, event_id, retry)
            data, event, event_id, retry, seen = [], None, None, None, False
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        seen = True
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
        elif field == "id":
            event_id = value
        elif field == "retry":
            retry = int(value)
    if seen:
        yield SseEvent("\n".join(data), event, event_id, retry)


def sse_messages(events: Iterable[SseEvent]) -> list[dict[str, Any]]:
    """JSON-RPC messages carried by SSE events (priming events with empty data skipped)."""
    out = []
    for event in events:
        if event.data.strip():
            assert event.event in (None, "message"), event
            out.append(json.loads(event.data))
    return out


def sse_json(text: str) -> list[dict[str, Any]]:
    """The JSON messages of a complete SSE body, whatever their event name (events without
    data, such as priming events, skipped).  ``sse_messages`` is the strict reading."""
    return [json.loads(event.data) for event in parse_sse(text) if event.data.strip()]


def reply_messages(response: httpx.Response) -> list[dict[str, Any]]:
    """Every JSON-RPC message in a (fully read) POST reply, JSON or SSE."""
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        return [response.json()]
    if content_type.startswith("text/event-stream"):
        return sse_messages(parse_sse(response.text))
    raise AssertionError(f"unexpected content-type {content_type!r}: {response.text[:200]!r}")


# --------------------------------------------------------------------------- schema checks


def first_text(result: dict[str, Any]) -> str:
    """The text of the first content block of a tool result."""
    return str(result["content"][0]["text"])


def check_messages(
    revision: str, messages: Iterable[dict[str, Any]], request_method: str | None = None
) -> None:
    """Validate every server message against the official schema of ``revision``.

    Responses (result or error) use ``request_method``; notifications and server requests
    are checked by their own method.
    """
    for message in messages:
        validate_outgoing(revision, message, request_method=request_method)


def final_of(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The response (result or error) among a reply's messages; it must be the last."""
    assert messages, "no messages in the reply"
    last = messages[-1]
    assert "result" in last or "error" in last, messages
    assert all("result" not in m and "error" not in m for m in messages[:-1]), messages
    return last
