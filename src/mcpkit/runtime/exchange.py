"""The channel from one request back to its client, implemented by each transport.

A handler's :class:`~mcpkit.server.context.Context` talks to the client only through this
interface: request-scoped notifications (progress, logging), server->client requests on
the legacy era, and (legacy HTTP) closing the SSE stream so the client resumes it.  The
server package never imports a transport; transports subclass :class:`Exchange`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..types.errors import INTERNAL_ERROR, McpError


class Exchange:
    """Default: notifications are dropped and server->client requests are impossible."""

    __slots__ = ()

    #: The request's HTTP headers, names in lower case (HTTP transports set it per
    #: request); empty on stdio and in-process calls.
    headers: Mapping[str, str] = MappingProxyType({})
    #: OTel ``network.transport`` of the request: ``"tcp"`` (HTTP), ``"pipe"`` (stdio),
    #: None in process.  Read by the telemetry middleware.
    network_transport: str | None = None

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        raise McpError(INTERNAL_ERROR, f"this transport cannot send {method} to the client")

    async def close_stream(self, retry_ms: int | None = None) -> None:
        """Legacy resumable SSE: end the response stream now; the client reconnects."""
        return None


NULL_EXCHANGE = Exchange()
