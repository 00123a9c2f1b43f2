"""A small MCP-over-HTTP test client: builds correct requests, reads JSON or SSE replies and
validates every JSON-RPC message the server sends against the official schema.

Deliberately thin and explicit (httpx + our own SSE reader) so that a transport test sees
exactly what went over the wire.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from support.mcp import (
    ACCEPT_BOTH,
    SseEvent,
    check_messages,
    final_of,
    initialize_request,
    iter_sse,
    legacy_request,
    modern_headers,
    modern_request,
    reply_messages,
)
from support.schema import LEGACY, MODERN, validate_outgoing


@dataclass
class Reply:
    response: httpx.Response
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def final(self) -> dict[str, Any]:
        return final_of(self.messages)

    @property
    def result(self) -> dict[str, Any]:
        final = self.final
        assert "result" in final, final
        result: dict[str, Any] = final["result"]
        return result

    @property
    def notifications(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if "method" in m and "id" not in m]


def expect_error(
    response: httpx.Response,
    status: int,
    code: int,
    revision: str = MODERN,
    request_id: Any = None,
) -> dict[str, Any]:
    """Assert an HTTP error reply with a schema-valid JSON-RPC error body; return the error."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers.get("content-type", "").startswith("application/json"), (
        response.headers,
        response.text[:500],
    )
    body = response.json()
    validate_outgoing(revision, body)
    assert body["error"]["code"] == code, body
    assert body.get("id") == request_id, body
    error: dict[str, Any] = body["error"]
    return error


class McpHttp:
    """Talks to one MCP endpoint; ``alive`` says whether the server process still runs."""

    def __init__(self, url: str, alive: Callable[[], bool] = lambda: True) -> None:
        self.url = url
        self.alive = alive
        self.http = httpx.Client(timeout=httpx.Timeout(15.0))
        self._ids = itertools.count(1000)

    def close(self) -> None:
        self.http.close()

    def next_id(self) -> int:
        return next(self._ids)

    # ----- raw
    def post_raw(self, content: bytes | str, headers: dict[str, Any]) -> httpx.Response:
        return self.http.post(self.url, content=content, headers=headers)

    def post_json(self, body: Any, headers: dict[str, Any]) -> httpx.Response:
        return self.post_raw(json.dumps(body), headers)

    # ----- modern
    def modern_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        request_id: int | str | None = None,
        **meta: Any,
    ) -> dict[str, Any]:
        rid = request_id if request_id is not None else self.next_id()
        return modern_request(rid, method, params, capabilities=capabilities, **meta)

    def modern(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        headers: dict[str, str | None] | None = None,
        **meta: Any,
    ) -> Reply:
        """One modern request with correct headers (``headers`` overrides); every server
        message in the reply is schema-checked."""
        message = self.modern_request(method, params, capabilities=capabilities, **meta)
        sent = modern_headers(
            message, **{k.replace("-", "_"): v for k, v in (headers or {}).items()}
        )
        response = self.post_json(message, sent)
        messages = reply_messages(response)
        check_messages(MODERN, messages, request_method=method)
        final = final_of(messages)
        assert final.get("id") == message["id"], (final, message["id"])
        return Reply(response, messages)

    @contextmanager
    def modern_stream(
        self, method: str, params: dict[str, Any] | None = None, **meta: Any
    ) -> Iterator[tuple[dict[str, Any], httpx.Response, Iterator[dict[str, Any]]]]:
        """A modern request whose SSE reply is read incrementally: yields (request,
        response, message iterator); every message is schema-checked as it arrives."""
        message = self.modern_request(method, params, **meta)
        with self.http.stream(
            "POST", self.url, content=json.dumps(message), headers=modern_headers(message)
        ) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            yield message, response, self._sse_messages(response.iter_lines(), MODERN, method)

    @staticmethod
    def _sse_messages(
        lines: Iterator[str], revision: str, method: str, events: list[SseEvent] | None = None
    ) -> Iterator[dict[str, Any]]:
        for event in iter_sse(lines):
            if events is not None:
                events.append(event)
            if not event.data.strip():
                continue
            assert event.event in (None, "message"), event
            parsed = json.loads(event.data)
            validate_outgoing(revision, parsed, request_method=method)
            yield parsed

    def assert_healthy(self) -> None:
        """The server process is up and a valid request succeeds."""
        assert self.alive(), "the server process died"
        reply = self.modern("tools/list")
        assert reply.status == 200
        assert isinstance(reply.result["tools"], list)


class LegacySessionClient:
    """A 2025-11-25 client session over HTTP (initialize -> initialized -> requests)."""

    def __init__(self, http: McpHttp, capabilities: dict[str, Any] | None = None) -> None:
        self.http = http
        response = http.post_json(
            initialize_request(0, LEGACY, capabilities),
            {"Content-Type": "application/json", "Accept": ACCEPT_BOTH},
        )
        assert response.status_code == 200, response.text
        messages = reply_messages(response)
        check_messages(LEGACY, messages, request_method="initialize")
        self.init_result: dict[str, Any] = final_of(messages)["result"]
        self.session_id: str = response.headers["mcp-session-id"]
        note = http.post_json(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers()
        )
        assert note.status_code == 202 and note.content == b""

    def headers(self, **extra: str) -> dict[str, str]:
        out = {
            "Content-Type": "application/json",
            "Accept": ACCEPT_BOTH,
            "Mcp-Session-Id": self.session_id,
            "MCP-Protocol-Version": LEGACY,
        }
        out.update(extra)
        return out

    def request(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        message = legacy_request(self.http.next_id(), method, params)
        response = self.http.post_json(message, self.headers())
        messages = reply_messages(response)
        check_messages(LEGACY, messages, request_method=method)
        assert final_of(messages).get("id") == message["id"]
        return Reply(response, messages)

    @contextmanager
    def stream(
        self, method: str, params: dict[str, Any] | None = None
    ) -> Iterator[tuple[dict[str, Any], list[SseEvent], Iterator[dict[str, Any]]]]:
        """A legacy request read incrementally: yields (request, raw events seen so far,
        message iterator)."""
        message = legacy_request(self.http.next_id(), method, params)
        events: list[SseEvent] = []
        with self.http.http.stream(
            "POST", self.http.url, content=json.dumps(message), headers=self.headers()
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["mcp-session-id"] == self.session_id
            yield (
                message,
                events,
                McpHttp._sse_messages(response.iter_lines(), LEGACY, method, events),
            )
