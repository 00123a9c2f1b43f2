"""Run an ASGI app on uvicorn, the embedded default, with uvloop/httptools when present.

uvicorn has no deadline for receiving request *headers*: a client that sends one header
byte every few seconds (slowloris) holds a connection forever.  The protocol classes here
add one: a connection must deliver complete headers within ``header_timeout`` seconds of
starting a request (or of connecting), else it is closed.  Slow bodies are bounded by the
app itself (``HttpOptions.body_timeout_s``, answered with 408).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import socket


HEADER_TIMEOUT_S = 10.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: A request head larger than this (or a header value over 8 KiB, or more fields) gets
#: 431 and a close, like common proxies (nginx: 8 KiB lines).
MAX_HEADER_BYTES = 16 * 1024
MAX_HEADER_VALUE = 8 * 1024
MAX_HEADER_FIELDS = 100
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: 85\r\n\r\n"
    b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"Request Header Fields Too Large"}}'
)


def _available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


class _HeaderDeadline:
    """Mixin for uvicorn protocol classes: close connections whose headers dawdle."""

    header_timeout: float = HEADER_TIMEOUT_S
    _deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(self.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        transport = getattr(self, "transport", None)
        if transport is not None and not transport.is_closing():
            transport.close()

    def _too_large(self) -> None:
        self._disarm()
        transport = getattr(self, "transport", None)
        if transport is not None and not transport.is_closing():
            transport.write(_TOO_LARGE)
            transport.close()


class _Coalescing:
    """A connection's transport whose writes made in one step of the loop leave in one
    ``write`` system call, at the end of that step.

    uvicorn writes a response head and its body with two ``transport.write`` calls, and
    uvloop (like asyncio) sends each at once: two system calls and two TCP segments for a
    small JSON answer.  Holding the head until the end of the loop step lets the body join
    it: one call, one segment, less CPU per request.  Nothing waits
    longer than the current step (a streamed head still leaves before the loop polls
    again), order is kept, and :meth:`close` sends what is held first.
    """

    __slots__ = ("_flush_soon", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._pending: list[bytes] | None = None
        self._flush_soon = asyncio.get_running_loop().call_soon

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if type(data) is not bytes:  # a bytearray or memoryview may change before the flush
            data = bytes(data)
        pending = self._pending
        if pending is None:
            self._pending = [data]
            self._flush_soon(self._flush)
        else:
            pending.append(data)

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

    # Called per request by uvicorn: plain methods, not the __getattr__ fallback.
    def is_closing(self) -> bool:
        return bool(self._transport.is_closing())

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def __getattr__(self, name: str) -> Any:  # the rest of the transport, as it is
        return getattr(self._transport, name)


def _coalescing(transport: asyncio.Transport) -> asyncio.Transport:
    """``transport`` behind a :class:`_Coalescing` (a transport by duck typing: what it does
    not wrap is the real transport's own)."""
    return cast(asyncio.Transport, _Coalescing(transport))


def _head_fits(url: bytes, headers: list[tuple[bytes, bytes]]) -> bool:
    """The exact size check of a complete request head (see ``GuardedHttpTools``)."""
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
    if _available("httptools"):
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        class GuardedHttpTools(_HeaderDeadline, HttpToolsProtocol):
            """The deadline and the size limits, at almost no cost per request.

            A request head nearly always arrives whole in one read.  So nothing is done per
            header: the head is checked once it is complete, and exactly only when it was
            not a single read of at most 8 KiB (which can hold no oversized value nor an
            oversized head).  While a head is incomplete, the bytes received for it are
            counted (a head that grows past the limit is refused before it is complete), and
            the deadline timer is armed only then (not for every request: a timer per
            request cost more than the rest of this guard).
            """

            _in_head = False  # a request head has begun and is not complete yet
            _began = False  # ... and it began in the chunk being fed
            _chunk = 0  # size of the chunk being fed
            _head_bytes = 0  # bytes of an incomplete head's later chunks

            def connection_made(self, transport: Any) -> None:
                super().connection_made(_coalescing(transport))
                self._arm()  # the first head must arrive within the deadline of connecting

            def data_received(self, data: bytes) -> None:
                self._chunk = len(data)
                HttpToolsProtocol.data_received(self, data)
                if self._in_head:  # the head is still incomplete after this chunk
                    if self._began:  # a new head: the deadline runs from its start
                        self._began = False
                        self._head_bytes = 0
                        self._arm()
                    else:
                        self._head_bytes += self._chunk
                        if self._head_bytes > MAX_HEADER_BYTES:
                            self._too_large()

            def on_message_begin(self) -> None:
                HttpToolsProtocol.on_message_begin(self)
                self._in_head = self._began = True

            def on_headers_complete(self) -> None:
                self._in_head = False
                if self._deadline is not None:
                    self._disarm()
                if self.transport.is_closing():
                    return
                headers = self.headers
                whole = self._began and self._chunk <= MAX_HEADER_VALUE
                self._began = False
                if len(headers) > MAX_HEADER_FIELDS or not (whole or _head_fits(self.url, headers)):
                    self._too_large()
                    return
                HttpToolsProtocol.on_headers_complete(self)

            def connection_lost(self, exc: Exception | None) -> None:
                self._disarm()
                super().connection_lost(exc)

        classes["httptools"] = GuardedHttpTools
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11(_HeaderDeadline, H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(_coalescing(transport))
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if getattr(self, "cycle", None) is not None:
                self._disarm()  # a request's headers arrived

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    classes["h11"] = GuardedH11
    return classes


def uvicorn_config(app: Any, host: str, port: int, **kw: Any) -> Any:
    import uvicorn

    classes = protocol_classes()
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": kw.pop("log_level", "warning"),
        "lifespan": "on",
        "loop": "uvloop" if _available("uvloop") else "asyncio",
        "http": classes.get("httptools", classes["h11"]),
        "timeout_keep_alive": 5,
        # One logging call per request otherwise (filtered at WARNING, still paid for).
        "access_log": False,
        "timeout_graceful_shutdown": 10,
        # mcpkit never reads the client address X-Forwarded-For would rewrite (work on
        # every request); pass proxy_headers=True to get it for your own middleware.
        "proxy_headers": False,
        # No ``server: uvicorn`` line: it names the software to every client, and each
        # response header costs its writer (and a gateway's client, reading it) per answer.
        # ``server_header=True`` puts it back.
        "server_header": False,
    }
    options.update(kw)
    return uvicorn.Config(app, **options)


def _stream_closer(app: Any) -> Any:
    """The ``shutdown_streams`` of the MCP app inside ``app`` (wrappers expose theirs as
    ``mcp``/``app``), or None."""
    for _ in range(4):
        closer = getattr(app, "shutdown_streams", None)
        if closer is not None:
            return closer
        app = getattr(app, "mcp", None) or getattr(app, "app", None)
        if app is None:
            return None
    return None


def server_class() -> type:
    """A ``uvicorn.Server`` that, the moment it is told to exit (a signal or
    ``should_exit = True`` from any thread), ends open listen and GET streams first
    (listen streams with their final result), so the graceful shutdown does not wait for
    them to time out."""
    import uvicorn

    class McpUvicornServer(uvicorn.Server):
        _loop: asyncio.AbstractEventLoop | None = None
        _exiting = False

        @property
        def should_exit(self) -> bool:
            return self._exiting

        @should_exit.setter
        def should_exit(self, value: bool) -> None:
            first = value and not self._exiting
            self._exiting = value
            closer = _stream_closer(getattr(self, "config", None) and self.config.app)
            if first and closer is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(closer)

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            self._loop = asyncio.get_running_loop()
            await super().serve(sockets)

        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None, None, None]:
            """SIGINT/SIGTERM start the graceful shutdown; unlike uvicorn's own, the signal
            is not re-raised afterwards, so a clean drain exits with status 0."""
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return McpUvicornServer


#: Allocations between two young-generation collections in a serving process (CPython's
#: default is 700).  See :func:`tune_gc`.
GC_YOUNG_THRESHOLD = 20_000


def tune_gc() -> None:
    """Make the cyclic garbage collector cheap for a long-lived server.

    A server holding 10,000 listen streams has ~600,000 objects the collector tracks;
    with CPython's default thresholds a ``tools/list_changed`` fan-out, which allocates a
    little per stream, set off full collections of all of them and doubled its CPU time
    (``python -m bench.scale_streams``; figures in bench/RESULTS.md).
    Everything alive once the server is set up (modules, registrations) is frozen out of
    the collector's walks, and young collections run every 20,000 allocations instead of
    700, so the older generations fill, and are walked, far less often.  Garbage without
    cycles is freed by reference counting as before."""
    import gc

    gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def serve_uvicorn(app: Any, host: str, port: int, **kw: Any) -> None:
    """Serve until SIGINT/SIGTERM (see :func:`server_class`)."""
    tune_gc()
    server_class()(uvicorn_config(app, host, port, **kw)).run()
