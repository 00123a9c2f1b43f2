"""One keep-alive HTTP/1.1 connection of :class:`~mcpkit.transports.http11.Http11Pool`.

:class:`Http11Connection` is an asyncio protocol that feeds httptools as bytes arrive:
it keeps the current response's status, headers and unread body chunks, bounds the
response head (:data:`MAX_HEAD_BYTES`), stops reading the socket while more than
:data:`HIGH_WATER` bytes wait unread, and wakes the one task reading the response.
A request past its deadline is ended here (:meth:`Http11Connection.expire`): the
connection is aborted and its reader raises :class:`DeadlineExceeded`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

httptools: Any
try:  # the `fast` extra; without it callers keep httpx's default transport
    import httptools
except ImportError:  # pragma: no cover - exercised only without the extra
    httptools = None

__all__ = ["HIGH_WATER", "MAX_HEAD_BYTES", "DeadlineExceeded", "Http11Connection", "available"]

#: Buffered, unread response bytes above which we stop reading the socket.
HIGH_WATER = 256 * 1024
#: The most a response's status line and headers may hold (httpx's own transport allows
#: as much); a head still open past it is refused and its connection closed.
MAX_HEAD_BYTES = 100 * 1024


class DeadlineExceeded(httpx.TimeoutException):
    """A request with a deadline (:meth:`~mcpkit.transports.http11.Http11Pool.request`)
    was not answered in time."""


def available() -> bool:
    """Whether the pooled HTTP/1.1 transport can run here (httptools is importable)."""
    return httptools is not None


class Http11Connection(asyncio.Protocol):
    """One keep-alive connection: an asyncio protocol that feeds httptools as bytes
    arrive, and wakes the one task reading the current response."""

    def __init__(self, key: tuple[str, int]) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.parser: Any = httptools.HttpResponseParser(self)
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.status = 0
        self.keep_alive = False
        self.complete = False
        self.pending: list[bytes] = []
        self.buffered = 0
        self.paused = False
        self.received_any = False
        #: Bytes read while the current response's head is not complete.
        self.head_size = 0
        self.closed = False
        self.error: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None
        #: When its current (or last) request started, on the loop's clock.
        self.used_at = 0.0
        #: The current request's deadline (loop time) and timeout, when it has one
        #: (:meth:`~mcpkit.transports.http11.Http11Pool.request`'s ``deadline``).
        self.expires = 0.0
        self.timeout = 0.0

    # asyncio protocol ------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received_any = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = httpx.RemoteProtocolError(f"invalid HTTP response: {exc}")
            self._abort()
        if not self.headers_done:  # (counted as it arrives: httptools would keep it all)
            self.head_size += len(data)
            if self.head_size > MAX_HEAD_BYTES and self.error is None:
                self.error = httpx.RemoteProtocolError(
                    f"the response head is larger than {MAX_HEAD_BYTES} bytes"
                )
                self._abort()
        if self.buffered > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        waiter = self.waiter  # (_wake, inline: once per read of the socket)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    # httptools callbacks (the pool resets the flags before each request) ----------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        # Asked now: once the message is complete the parser has reset for the next.
        self.status = self.parser.get_status_code()
        if self.status < 200:  # an interim answer: the real one follows
            self.headers = []
            return
        self.headers_done = True
        self.keep_alive = bool(self.parser.should_keep_alive())

    def on_body(self, body: bytes) -> None:
        self.pending.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        self.complete = self.headers_done  # (not an interim answer's end)

    # -----------------------------------------------------------------------------
    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def expire(self) -> None:
        """The request on this connection passed its deadline: its reader raises
        :class:`DeadlineExceeded`, and closing the connection cancels the request."""
        self.error = DeadlineExceeded(f"no answer within {self.timeout:g}s")
        self._abort()
        self._wake()

    def _abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def take(self) -> list[bytes]:
        chunks, self.pending, self.buffered = self.pending, [], 0
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.transport.resume_reading()
        return chunks

    async def wait(self) -> None:
        """Until more bytes were parsed, or the connection closed; raises what ended it
        early (an invalid answer, a deadline passed)."""
        if self.error is not None:
            raise self.error
        if self.closed:
            return
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()
