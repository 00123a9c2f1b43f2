"""In-process dispatch helpers for framework tests (no transport, no event loop tricks).

Every result and every error a helper returns has already been checked against the official
JSON Schema of its revision, wrapped in a JSON-RPC response envelope: a framework test
cannot forget to validate.
"""

from __future__ import annotations

from typing import Any

from mcpkit import McpError, Server
from mcpkit.protocol.negotiation import RequestMeta
from mcpkit.runtime.exchange import Exchange
from mcpkit.types import jsonrpc
from support.schema import LEGACY, MODERN, validate_outgoing

CLIENT_INFO = {"name": "mcpkit-tests", "version": "0.0.1"}


class CollectingExchange(Exchange):
    """Keeps every notification a request sends, as JSON-RPC notifications."""

    __slots__ = ("notifications",)

    def __init__(self) -> None:
        self.notifications: list[dict[str, Any]] = []

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append({"jsonrpc": "2.0", "method": method, "params": params})


def modern(capabilities: dict[str, Any] | None = None, **kw: Any) -> RequestMeta:
    return RequestMeta(
        era="modern",
        protocol_version=MODERN,
        client_capabilities=capabilities or {},
        client_info=CLIENT_INFO,
        **kw,
    )


def legacy(
    capabilities: dict[str, Any] | None = None, version: str = LEGACY, **kw: Any
) -> RequestMeta:
    return RequestMeta(
        era="legacy",
        protocol_version=version,
        client_capabilities=capabilities or {},
        client_info=CLIENT_INFO,
        **kw,
    )


def revision_of(meta: RequestMeta) -> str:
    return MODERN if meta.era == "modern" else LEGACY


async def call(
    server: Server,
    method: str,
    params: dict[str, Any] | None = None,
    meta: RequestMeta | None = None,
    exchange: Exchange | None = None,
    *,
    request_id: int | str = 1,
    principal: object = None,
) -> dict[str, Any]:
    """Dispatch one request (of ``principal``); return its (schema-checked) result."""
    meta = meta or modern()
    message = jsonrpc.request(request_id, method, params or {})
    result = await server.dispatch(
        message, meta, exchange or CollectingExchange(), principal=principal
    )
    validate_outgoing(revision_of(meta), jsonrpc.result(request_id, result), request_method=method)
    return result


async def call_error(
    server: Server,
    method: str,
    params: dict[str, Any] | None = None,
    meta: RequestMeta | None = None,
    exchange: Exchange | None = None,
    *,
    code: int,
    request_id: int | str = 1,
    principal: object = None,
) -> McpError:
    """Dispatch one request (of ``principal``) that must fail with ``code``; return the
    (schema-checked) error."""
    meta = meta or modern()
    message = jsonrpc.request(request_id, method, params or {})
    try:
        result = await server.dispatch(
            message, meta, exchange or CollectingExchange(), principal=principal
        )
    except McpError as err:
        assert err.code == code, f"expected {code}, got {err.code}: {err.message}"
        validate_outgoing(revision_of(meta), jsonrpc.error(request_id, err))
        return err
    raise AssertionError(f"expected error {code}, got result {result!r}")


def text_of(result: dict[str, Any]) -> str:
    """The text of a CallToolResult's single text block."""
    blocks = result["content"]
    assert len(blocks) == 1 and blocks[0]["type"] == "text", blocks
    text: str = blocks[0]["text"]
    return text
