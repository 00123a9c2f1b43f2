"""Run an ASGI app on uvicorn, the embedded default, with uvloop/httptools when present.

The protocol classes here add what uvicorn lacks: a deadline for a request's *head* (a
slowloris client sending a byte every few seconds is closed ``header_timeout`` seconds
after its head, or its connection, began), a bound on a head's size (431 and a close,
like common proxies), and writes coalesced per loop step.  Slow bodies are bounded by
the app itself (``HttpOptions.body_timeout_s``, answered with 408).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterable
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import socket
    from types import FrameType


HEADER_TIMEOUT_S = 10.0
#: A request head larger than this (or a header value over 8 KiB, or more fields) gets
#: 431 and a close (nginx: 8 KiB lines).
MAX_HEADER_BYTES = 16 * 1024
MAX_HEADER_VALUE = 8 * 1024
MAX_HEADER_FIELDS = 100
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: 85\r\n\r\n"
    b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"Request Header Fields Too Large"}}'
)


class _Guarded(asyncio.Protocol):
    """Mixin for uvicorn's protocol classes: writes coalesced (:class:`_Coalescing`), and
    the connection closed at ``_deadline`` (armed while a head is incomplete, and from
    connecting until the first head)."""

    header_timeout: float = HEADER_TIMEOUT_S
    _deadline: asyncio.TimerHandle | None = None
    transport: asyncio.Transport

    def connection_made(self, transport: Any) -> None:
        super().connection_made(cast(asyncio.Transport, _Coalescing(transport)))
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = asyncio.get_running_loop().call_later(self.header_timeout, self._close)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _close(self, last_words: bytes = b"") -> None:
        self._disarm()
        if not self.transport.is_closing():
            if last_words:
                self.transport.write(last_words)
            self.transport.close()


class _Coalescing:
    """A connection's transport whose writes made in one step of the loop leave in one
    ``write`` system call, at the end of that step (uvicorn writes a response's head and
    body apart: two system calls and two segments otherwise).  Nothing waits longer than
    the current step, order is kept, and :meth:`close` sends what is held first.  What it
    does not wrap is the real transport's own."""

    __slots__ = ("_flush_soon", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._pending: list[bytes] | None = None
        self._flush_soon = asyncio.get_running_loop().call_soon

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if type(data) is not bytes:  # a bytearray or memoryview may change before the flush
            data = bytes(data)
        if self._pending is None:
            self._pending = [data]
            self._flush_soon(self._flush)
        else:
            self._pending.append(data)

    def _flush(self) -> None:
        pending = self._pending
        if pending:
            self._pending = None
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def writelines(self, chunks: Iterable[bytes | bytearray | memoryview]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def is_closing(self) -> bool:  # (per request: a method, not the __getattr__ fallback)
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class HeadTooLarge(Exception):
    """A request head past the guard's limits (answered with 431 and a close)."""


def _head_fits(url: bytes, headers: list[tuple[bytes, bytes]]) -> bool:
    if len(url) > MAX_HEADER_BYTES:
        return False
    size = 0
    for name, value in headers:
        if len(value) > MAX_HEADER_VALUE:
            return False
        size += len(name) + len(value)
    return size <= MAX_HEADER_BYTES


def protocol_classes() -> dict[str, type]:
    """``{"httptools": cls, "h11": cls}`` for what is installed."""
    classes: dict[str, type] = {}
    if find_spec("httptools") is not None:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        class GuardedHttpTools(_Guarded, HttpToolsProtocol):
            """The deadline and the size limits, checked once a head is complete, not per
            header.  A head read whole in one chunk of at most 8 KiB cannot be too large;
            another is measured.  While a head is incomplete its later chunks are counted
            (one growing past the limit is refused before it completes), and only then is
            the deadline timer armed: a timer per request would cost more than the rest."""

            #: The request head being read: None when there is none, -1 while the chunk
            #: it began in is fed, then the bytes of its later chunks.
            _head: int | None = None
            _chunk = 0  # size of the chunk being fed

            def data_received(self, data: bytes) -> None:
                self._chunk = len(data)
                HttpToolsProtocol.data_received(self, data)
                head = self._head
                if head is None:
                    return
                if head < 0:  # a new head, incomplete: the deadline runs from its start
                    self._head = 0
                    self._arm()
                else:
                    self._head = head = head + self._chunk
                    if head > MAX_HEADER_BYTES:
                        self._close(_TOO_LARGE)

            def on_message_begin(self) -> None:
                HttpToolsProtocol.on_message_begin(self)
                self._head = -1

            def on_headers_complete(self) -> None:
                whole = self._head == -1 and self._chunk <= MAX_HEADER_VALUE
                self._head = None
                self._disarm()
                if self.transport.is_closing():
                    return
                if len(self.headers) > MAX_HEADER_FIELDS or not (
                    whole or _head_fits(self.url, self.headers)
                ):
                    self._close(_TOO_LARGE)
                    return
                HttpToolsProtocol.on_headers_complete(self)

        classes["httptools"] = GuardedHttpTools
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedHeads(h11.Connection):
        """h11's server side with the guard's head limits: a head past them raises
        :class:`HeadTooLarge` (uvicorn answers h11's own errors with 400)."""

        def next_event(self) -> Any:
            try:
                event = super().next_event()
            except h11.RemoteProtocolError as exc:
                if exc.error_status_hint == 431:  # the incomplete head outgrew the bound
                    raise HeadTooLarge from None
                raise
            if type(event) is h11.Request:
                fields = event.headers.raw_items()
                if len(fields) > MAX_HEADER_FIELDS or not _head_fits(event.target, fields):
                    raise HeadTooLarge
            return event

    class GuardedH11(_Guarded, H11Protocol):
        """The deadline, armed while h11 holds an incomplete head, and the size limits of
        the httptools guard (:class:`BoundedHeads`)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.conn = BoundedHeads(h11.SERVER, MAX_HEADER_BYTES)

        def handle_events(self) -> None:
            try:
                super().handle_events()
            except HeadTooLarge:
                self._close(_TOO_LARGE)
                return
            if self.conn.their_state is not h11.IDLE or not self.conn.trailing_data[0]:
                self._disarm()
            elif self._deadline is None:
                self._arm()

    classes["h11"] = GuardedH11
    return classes


def uvicorn_config(app: Any, host: str, port: int, **kw: Any) -> Any:
    """mcpkit's uvicorn settings; any keyword overrides one.  No access log (a logging
    call per request), no ``X-Forwarded-For`` rewriting (mcpkit never reads the client
    address) and no ``server: uvicorn`` header (it names the software to every client)."""
    import uvicorn

    classes = protocol_classes()
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": "warning",
        "lifespan": "on",
        "loop": "uvloop" if find_spec("uvloop") is not None else "asyncio",
        "http": classes.get("httptools", classes["h11"]),
        "timeout_keep_alive": 5,
        "access_log": False,
        "timeout_graceful_shutdown": 10,
        "proxy_headers": False,
        "server_header": False,
    }
    return uvicorn.Config(app, **(options | kw))


def _stream_closer(app: Any) -> Any:
    """The ``shutdown_streams`` of the MCP app inside ``app`` (wrappers expose theirs as
    ``mcp`` or ``app``), or None."""
    while app is not None:
        closer = getattr(app, "shutdown_streams", None)
        if closer is not None:
            return closer
        app = getattr(app, "mcp", None) or getattr(app, "app", None)
    return None


def server_class() -> type:
    """A ``uvicorn.Server`` whose shutdown (a signal, or ``should_exit = True`` from any
    thread) ends open listen and GET streams first, listen streams with their final
    result, so the graceful drain does not wait for them to time out."""
    import uvicorn

    class McpUvicornServer(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            closer = _stream_closer(self.config.app)
            if closer is not None:
                closer()
            await super().shutdown(sockets)

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:  # noqa: V105
            """SIGINT/SIGTERM start the graceful shutdown (a second SIGINT forces it);
            unlike uvicorn's own, the signal is not noted to be raised again after the
            drain, so a clean drain exits with status 0."""
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True  # noqa: V101 (uvicorn.Server reads it)
            self.should_exit = True

    return McpUvicornServer


#: Allocations between two young-generation collections in a serving process (CPython's
#: default is 700).
GC_YOUNG_THRESHOLD = 20_000


def tune_gc() -> None:
    """Make the cyclic garbage collector cheap for a long-lived server (docs/scale.md):
    what is alive once it is set up is frozen out of its walks, and the older generations
    (hundreds of thousands of objects with many streams) are walked far less often."""
    import gc

    gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def serve_uvicorn(app: Any, host: str, port: int, **kw: Any) -> None:
    """Serve until SIGINT/SIGTERM (see :func:`server_class`)."""
    tune_gc()
    server_class()(uvicorn_config(app, host, port, **kw)).run()
