"""JSON-RPC / MCP error codes and the exception that carries one.

:class:`McpError` is the single error type that crosses layers: handlers raise it (or
something that is converted to it in exactly one place, the dispatcher) and transports
turn it into a wire error with :meth:`McpError.to_wire` and, on HTTP, its ``http_status``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
#: Retired in 2026-07-28 but still sent to (and accepted from) legacy peers.
LEGACY_RESOURCE_NOT_FOUND: Final = -32002

#: HTTP status for each error code on the 2026-07-28 Streamable HTTP transport.
_HTTP_STATUS: Final[dict[int, int]] = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    INTERNAL_ERROR: 500,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


class McpError(Exception):
    """A protocol-level failure with a JSON-RPC code, message and optional data."""

    __slots__ = ("code", "data", "http_headers", "http_status", "message")

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        http_status: int | None = None,
        http_headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status if http_status is not None else _HTTP_STATUS.get(code, 200)
        #: Extra HTTP response headers (e.g. ``Retry-After``) when sent over HTTP.
        self.http_headers = http_headers

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    def __repr__(self) -> str:
        return f"McpError(code={self.code}, message={self.message!r}, data={self.data!r})"


class ConfigError(ValueError):
    """A configuration file or value (host, gateway) is not valid; the message names the
    offending key.  One class for every role's config, so the command line catches one."""


def invalid_params(message: str, data: object = None) -> McpError:
    return McpError(INVALID_PARAMS, message, data)


def object_param(params: Mapping[str, Any], key: str, refusal: str) -> dict[str, Any]:
    """``params[key]`` where the spec wants an object: absent or null is an empty one,
    anything else but an object is refused as invalid params saying ``refusal``."""
    value = params.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_params(refusal)
    return value


def method_not_found(method: str) -> McpError:
    return McpError(METHOD_NOT_FOUND, f"Method not found: {method}")


def header_mismatch(detail: str) -> McpError:
    return McpError(HEADER_MISMATCH, f"Header mismatch: {detail}")


def unsupported_version(requested: object, supported: list[str]) -> McpError:
    return McpError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": supported, "requested": requested},
    )


def missing_capability(required: dict[str, Any], what: str = "") -> McpError:
    detail = f": {what}" if what else ""
    return McpError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability{detail}",
        {"requiredCapabilities": required},
    )


STATE_UNAVAILABLE: Final = -31050
"""The code of a request that needed the state store (Redis, SQLite) while it could not
be reached: an implementation-defined server error, answered with HTTP 503 and ``data``
``{"stateStore": kind}``."""


class StateUnavailable(McpError):
    """The state store (``kind``: ``redis``, ``sqlite``) cannot be reached: a connection
    refused or lost, a timeout, a database file that cannot be opened.  An expected
    outage, not a bug: the request that needed the store is answered -31050 with HTTP 503
    and ``data`` naming the kind of store (never its URL, which may hold a password); the
    operator learns of it from one log line (``mcpkit.state.watch``), not a traceback per
    request.  ``outcome`` is what the gateway's audit line says.  Defined here, with the
    codes, so that every layer (a transport's retry loop too) can tell it apart."""

    outcome = "state_unavailable"

    def __init__(self, kind: str, condition: str = "unavailable") -> None:
        """``condition``: what the store is, as the message says it (``busy``: it answers,
        but other writers of the same record kept winning over this one)."""
        super().__init__(
            STATE_UNAVAILABLE,
            f"State store {condition} ({kind}): retry later",
            {"stateStore": kind},
            http_status=503,
            http_headers=[(b"retry-after", b"1")],
        )
        self.kind = kind
