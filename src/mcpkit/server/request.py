"""What a handler may know about the request it answers, the same on every transport.

``ctx.request`` gathers facts that otherwise live in three places (the transport's HTTP
headers, the request's ``_meta`` or the legacy session, and the JSON-RPC envelope), so a
tool can read an ``X-Tenant`` header or the client's name without knowing whether it is
served over stdio or HTTP, on 2026-07-28 or 2025-11-25.  On stdio and in-process calls
``headers`` is an empty mapping, never None: code that reads a header works everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..types.jsonrpc import RequestId
from ..types.versions import Era

__all__ = ["RequestInfo"]


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """One request's facts (``ctx.request``)."""

    #: HTTP request headers, names in lower case; empty on stdio and in-process.
    headers: Mapping[str, str]
    #: ``"modern"`` (2026-07-28) or ``"legacy"`` (2025-11-25 and earlier).
    era: Era
    protocol_version: str
    #: The client's ``Implementation`` (name, version, ...) when it sent one.
    client_info: dict[str, Any] | None
    client_capabilities: dict[str, Any]
    #: The JSON-RPC id (None for a notification).
    request_id: RequestId | None
    method: str
    #: Who is calling, as the transport's authenticator decided (None: anonymous).
    principal: Any

    def header(self, name: str, default: str | None = None) -> str | None:
        """One header, by case-insensitive name."""
        return self.headers.get(name.lower(), default)
