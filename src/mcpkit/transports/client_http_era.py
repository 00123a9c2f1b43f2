"""The two eras of Streamable HTTP as the client transport sees them, in one object each.

A transport keeps no era state (:class:`~mcpkit.transports.client_base.ClientTransport`):
each message says its era (``params._meta`` names a 2026-07-28 version, or it does not).
:func:`wire_era` reads that once per message, and :mod:`.client_http` asks the answer how
to behave instead of asking which era it is:

* headers: ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` from the message
  itself (modern, never a session id), or the session's ``Mcp-Session-Id`` and negotiated
  version (legacy);
* cancellation: closing the response stream (modern) or ``notifications/cancelled``
  (legacy, where a closed stream is not a cancellation);
* a response on another stream (legacy servers route answers to the GET stream), a
  broken stream resumed with ``Last-Event-ID``, HTTP 404 as an expired session, and
  server->client requests: all legacy only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from ..protocol import headers as hdr
from ..protocol.negotiation import modern_version_of
from ..types.jsonrpc import Message
from ..types.methods import name_param

ACCEPT_BOTH = "application/json, text/event-stream"

__all__ = ["ACCEPT_BOTH", "LEGACY_WIRE", "MODERN_WIRE", "WireEra", "sendable_headers", "wire_era"]

_FIELD_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 token
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")  # visible ASCII, spaces and tabs


def sendable_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of the headers a client sends on every request, each checked once:
    :class:`ValueError` naming the first that cannot be sent as it is (a name that is
    not an RFC 9110 token, a value with a control character or outside ASCII, which
    could end or split the request head).  Every HTTP wire of the client takes its
    headers from here."""
    out = dict(headers or {})
    for name, value in out.items():
        if not _FIELD_NAME.fullmatch(name):
            raise ValueError(f"header name {name!r} cannot be sent (not an RFC 9110 token)")
        if not _FIELD_VALUE.fullmatch(value):
            raise ValueError(
                f"header {name!r} cannot be sent as it is (a control character or a "
                "character outside ASCII in its value)"
            )
    return out


class WireEra:
    """How one message travels in its era; stateless (the session lives in the transport)."""

    #: Keep the request findable by id: its answer may come on another stream.
    routed: ClassVar[bool] = False
    #: Cancel with ``notifications/cancelled`` (closing the stream does not cancel).
    cancel_by_notification: ClassVar[bool] = False
    #: HTTP 404 to a request means the session expired.
    session_bound: ClassVar[bool] = False
    #: Requests the server sends on the stream are answered (else ignored with a warning).
    serves_requests: ClassVar[bool] = False

    def resumable(self, last_event_id: str | None, session_id: str | None) -> bool:
        """Whether a stream that broke before the answer can be resumed with a GET."""
        return False

    def own_headers(
        self, message: Message, base: dict[str, str], session: dict[str, str] | None
    ) -> dict[str, str]:
        """The era's headers of one POSTed message (see :func:`request_headers`)."""
        raise NotImplementedError


class _Modern(WireEra):
    """2026-07-28: stateless; the request's own headers; closing the stream cancels."""

    def own_headers(
        self, message: Message, base: dict[str, str], session: dict[str, str] | None
    ) -> dict[str, str]:
        params = message.get("params")
        method = message.get("method")
        out = dict(base)
        out["MCP-Protocol-Version"] = str(modern_version_of(params))
        if isinstance(method, str):
            out["Mcp-Method"] = method
            member = name_param(method)
            value = params.get(member) if member and isinstance(params, dict) else None
            if isinstance(value, str):
                out["Mcp-Name"] = hdr.encode_header_value(value)
        return out


class _Legacy(WireEra):
    """2025-11-25 and before: a session, its GET stream, resumption, explicit cancel."""

    routed = True
    cancel_by_notification = True
    session_bound = True
    serves_requests = True

    def resumable(self, last_event_id: str | None, session_id: str | None) -> bool:
        return last_event_id is not None and session_id is not None

    def own_headers(
        self, message: Message, base: dict[str, str], session: dict[str, str] | None
    ) -> dict[str, str]:
        return dict(session if session is not None else base)


MODERN_WIRE: Final[WireEra] = _Modern()
LEGACY_WIRE: Final[WireEra] = _Legacy()


def wire_era(params: Any) -> WireEra:
    """The era of a message with these ``params``: modern when ``_meta`` names a version."""
    return MODERN_WIRE if isinstance(modern_version_of(params), str) else LEGACY_WIRE


def request_headers(
    message: Message,
    base: dict[str, str],
    session: dict[str, str] | None,
    extra: dict[str, str] | None,
) -> dict[str, str]:
    """The HTTP headers of one POSTed message.

    Modern (``_meta`` names a version): ``MCP-Protocol-Version``, ``Mcp-Method`` and, for
    the methods that have one, ``Mcp-Name`` (base64 sentinel form when needed); never a
    session id.  Legacy: the session's headers (``session``; None for ``initialize``, which
    has neither a session nor a negotiated version yet).  ``extra`` (``Mcp-Param-*``, or a
    version for a notification) goes last, checked as :func:`sendable_headers` checks.
    """
    out = wire_era(message.get("params")).own_headers(message, base, session)
    out["Accept"] = ACCEPT_BOTH
    out["Content-Type"] = "application/json"
    if extra:
        out.update(sendable_headers(extra))
    return out
