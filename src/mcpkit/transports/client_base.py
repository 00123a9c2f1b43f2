"""What a client transport promises, and the errors every client layer raises.

The client package sits above the transports and imports them, never the reverse, so the
exceptions a transport raises must live at (or below) this layer.  They are defined here
once and re-exported by :mod:`mcpkit.client.errors`; the client adds its own on top.

Every failure a caller can see is a :class:`ClientError` and says what happened in words:
which request, which server, what the server printed on stderr before it died.  Local
failures (lost connection, timeout) are never dressed up as JSON-RPC errors from the peer:
only :class:`ServerError` means "the server answered with an error".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, Protocol, Required, TypedDict, TypeVar, Unpack

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..types.errors import McpError
from ..types.jsonrpc import Message

T = TypeVar("T")

__all__ = [
    "ClientError",
    "ClientTransport",
    "ConnectError",
    "ConnectionClosedError",
    "HttpStatusError",
    "InboundNotificationHandler",
    "InboundRequestHandler",
    "ItemStream",
    "MessageStream",
    "MessageTooLargeError",
    "ProgressHandler",
    "ProtocolViolationError",
    "RequestTimeoutError",
    "ServerError",
    "ServerStartupError",
    "SessionExpiredError",
    "TransportError",
    "item_stream",
    "message_stream",
]


class ClientError(Exception):
    """Base class of every error the mcpkit client raises."""


class TransportError(ClientError):
    """The server could not be reached, or the connection to it failed."""


class ConnectError(TransportError):
    """Could not connect to (or start) the server at all."""


class ServerStartupError(ConnectError):
    """A stdio server did not start, or did not answer its first request in time."""


class ConnectionClosedError(TransportError):
    """The connection ended (process exit, stream closed) while a request was pending."""


class SessionExpiredError(TransportError):
    """A legacy HTTP session is gone (HTTP 404): the client re-initializes and retries."""


class ProtocolViolationError(TransportError):
    """The server sent something that is not valid MCP (bad JSON, wrong shape)."""


class MessageTooLargeError(ProtocolViolationError):
    """The server sent more than the client reads as one message (``max_message_bytes``:
    a body, an SSE line or event): reading stopped at the limit and the connection was
    closed."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class HttpStatusError(TransportError):
    """An HTTP error status without a JSON-RPC error body."""

    def __init__(self, message: str, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class RequestTimeoutError(ClientError, TimeoutError):
    """No answer within the request's timeout (progress may extend it up to a hard maximum)."""

    def __init__(
        self, method: str, seconds: float, *, hard: bool = False, detail: str = ""
    ) -> None:
        what = "the hard maximum of" if hard else "its timeout of"
        message = f"{method} got no answer within {what} {seconds:g}s"
        if detail:
            message += f" ({detail})"
        super().__init__(message)
        self.method = method
        self.seconds = seconds
        self.hard = hard


class ServerError(ClientError, McpError):
    """The server answered a request with a JSON-RPC error (``code``, ``message``, ``data``).

    It is also an :class:`~mcpkit.types.errors.McpError`, so a gateway can pass it on as is.
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: object = None,
        *,
        method: str | None = None,
        http_status: int | None = None,
    ) -> None:
        McpError.__init__(self, code, message, data)
        self.method = method
        #: The HTTP status the error came with (None on stdio).
        self.http_status = http_status  # type: ignore[assignment]

    def __str__(self) -> str:
        prefix = f"{self.method} failed: " if self.method else ""
        return f"{prefix}{self.message} (code {self.code})"

    @classmethod
    def from_wire(
        cls, error: Any, *, method: str | None = None, http_status: int | None = None
    ) -> ServerError:
        """Build from a JSON-RPC ``error`` member, tolerating malformed ones."""
        if not isinstance(error, dict):
            return cls(
                -32603,
                f"malformed error object: {error!r}"[:200],
                method=method,
                http_status=http_status,
            )
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            code = -32603
        message = error.get("message")
        return cls(
            code,
            str(message) if message is not None else "",
            error.get("data"),
            method=method,
            http_status=http_status,
        )


class ItemStream(Generic[T]):
    """The items of one long-lived stream, in order.

    Iteration ends when the producer closes its side; if the stream ended abnormally the
    producer first sets :attr:`error`, which iteration then raises instead of ending quietly
    (so a dropped connection is never mistaken for a graceful end).
    """

    def __init__(self, receive: MemoryObjectReceiveStream[T]) -> None:
        self._receive = receive
        self.error: BaseException | None = None

    def __aiter__(self) -> ItemStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self.error is not None:
                raise self.error from None
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Stop receiving: the producer's next send fails, iteration ends."""
        self._receive.close()


class MessageStream(ItemStream[Message]):
    """The messages of one ``subscriptions/listen`` stream, in order (see :class:`ItemStream`)."""


def item_stream(item: type[T], buffer: float) -> tuple[MemoryObjectSendStream[T], ItemStream[T]]:
    """A bounded stream of ``item`` objects: the producer's end and the reader's."""
    send, receive = anyio.create_memory_object_stream[T](buffer)
    return send, ItemStream(receive)


def message_stream(buffer: float) -> tuple[MemoryObjectSendStream[Message], MessageStream]:
    """A bounded stream of messages (a listen stream): the producer's end and the reader's."""
    send, receive = anyio.create_memory_object_stream[Message](buffer)
    return send, MessageStream(receive)


#: Called with each ``notifications/progress`` params for one request.
ProgressHandler = Callable[[dict[str, Any]], Awaitable[None] | None]
#: Answers a server->client request (legacy era); returns the result or raises McpError.
InboundRequestHandler = Callable[[Message], Awaitable[dict[str, Any]]]
#: Receives every notification that is not progress for a pending request.
InboundNotificationHandler = Callable[[Message], Awaitable[None]]


class SendOptions(TypedDict, total=False):
    """How one request is sent (:meth:`ClientTransport.request`), beside its method and
    params: ``timeout``, seconds without an answer (None: none; progress restarts it);
    ``max_timeout``, the bound progress cannot push it past (None: the transport's
    own); ``on_progress``, called with the request's ``notifications/progress`` params;
    ``headers``, extra HTTP headers for this request (ignored off HTTP)."""

    timeout: Required[float | None]
    max_timeout: float | None
    on_progress: ProgressHandler | None
    headers: dict[str, str] | None


class ClientTransport(Protocol):
    """One connection to one server, for both eras.

    The era of each request is visible in the message itself (``params._meta`` carries a
    protocol version on the modern era), so a transport needs no era state except what a
    legacy session adds (HTTP: session id and negotiated version, see
    :meth:`legacy_session_started`).
    """

    #: ``"stdio"`` or ``"http"``.
    kind: str
    #: Identifies the server for era caching (command line, or origin + path).
    server_key: str

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> bool | None: ...

    def set_handlers(
        self, on_request: InboundRequestHandler, on_notification: InboundNotificationHandler
    ) -> None:
        """Where server->client requests and unsolicited notifications go."""

    async def request(
        self, method: str, params: dict[str, Any] | None, **options: Unpack[SendOptions]
    ) -> dict[str, Any]:
        """Send one request with a fresh id and return its result.

        Raises :class:`ServerError` for an error response, :class:`RequestTimeoutError`,
        or a :class:`TransportError`.  Cancelling the caller cancels the request (stdio:
        ``notifications/cancelled``; HTTP: the response stream is closed).
        """
        ...

    async def notify(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None: ...

    def listen(
        self, params: dict[str, Any], *, headers: dict[str, str] | None = None
    ) -> AbstractAsyncContextManager[MessageStream]:
        """Open a ``subscriptions/listen`` stream: every message that belongs to it
        (notifications, then possibly the final result), in order."""
        ...

    async def legacy_session_started(self, version: str) -> None:
        """The ``initialize`` handshake succeeded with ``version``."""

    def describe(self) -> str:
        """Facts that help explain a failure (exit status, stderr tail)."""
        ...
