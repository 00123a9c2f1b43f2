"""A deliberately small raw MCP HTTP caller for tests: exact requests, exact answers.

The scale-out tests check what crosses the wire between replicas, so they build each
request by hand (headers, ``_meta``) instead of going through a client library.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import EventSource

from support.mcp import modern_headers, modern_meta

TASKS = "io.modelcontextprotocol/tasks"
_ids = itertools.count(1)


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    notifications: list[dict[str, Any]] = field(default_factory=list)

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.body, f"expected a result, got {self.body}"
        result: dict[str, Any] = self.body["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.body, f"expected an error, got {self.body}"
        error: dict[str, Any] = self.body["error"]
        return error


async def call(
    client: httpx.AsyncClient,
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    caps: dict[str, Any] | None = None,
) -> Reply:
    params = dict(params or {})
    params["_meta"] = modern_meta(caps)
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    async with client.stream(
        "POST", url, headers=modern_headers(body), content=json.dumps(body)
    ) as response:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            notes: list[dict[str, Any]] = []
            async for event in EventSource(response).aiter_sse():
                if not event.data:
                    continue
                message = json.loads(event.data)
                if "id" in message and ("result" in message or "error" in message):
                    return Reply(response.status_code, message, notes)
                notes.append(message)
            raise AssertionError("SSE stream ended without a response")
        await response.aread()
        return Reply(response.status_code, response.json())


async def legacy(
    client: httpx.AsyncClient,
    url: str,
    message: dict[str, Any],
    session: str | None,
    version: str = "2025-11-25",
) -> httpx.Response:
    h = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
    }
    if session is not None:
        h["mcp-session-id"] = session
    return await client.post(url, headers=h, content=json.dumps(message))
