"""A pooled HTTP/1.1 client wire, parsed by httptools: the cheap upstream hop.

httpx's default transport walks and probes every pooled connection per request, so its
cost grows with the concurrency (``bench/RESULTS.md``).  :class:`Http11Pool` keeps
keep-alive connections as asyncio protocols that feed httptools as bytes arrive: a
request is written with one ``send``, a response head is bounded as it arrives, a
connection is reused only after its previous response was read to the end, a close while
idle is seen as it happens, and one idle for longer than servers usually keep them is
dropped unused.  A request whose reused connection turns out closed before any byte of
the answer is retried once on a fresh one (the server closed it idle, so it never saw it).

It is the Streamable HTTP client's pooled wire (:mod:`.client_http`, given a pool) for
POSTs to an ``http://`` URL on asyncio, their answers read by the client's rules; the
fast lane (:mod:`mcpkit.compose.lane`) is the same client's shortest path onto it.
Cancellation and deadlines close the connection.  asyncio only.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

httptools: Any
try:  # the `fast` extra; without it callers keep httpx's default transport
    import httptools
except ImportError:  # pragma: no cover - exercised only without the extra
    httptools = None

__all__ = ["DeadlineExceeded", "Http11Pool", "PooledResponse", "ResponseHeaders", "available"]

#: Connections idle for longer than this are dropped unused (servers close idle ones
#: after a few seconds: uvicorn after 5 s).
MAX_IDLE_S = 4.0
#: Buffered, unread response bytes above which we stop reading the socket.
HIGH_WATER = 256 * 1024
#: The most a response's status line and headers may hold (httpx's own transport allows
#: as much); a head still open past it is refused and its connection closed.
MAX_HEAD_BYTES = 100 * 1024
_FRAMING = (b"content-length", b"transfer-encoding")


class DeadlineExceeded(httpx.TimeoutException):
    """A request with a deadline (:meth:`Http11Pool.request`) was not answered in time."""


def available() -> bool:
    """Whether the pooled HTTP/1.1 transport can run here (httptools is importable)."""
    return httptools is not None


class ResponseHeaders(list[tuple[bytes, bytes]]):
    """A response's headers as they came, (name, value) byte pairs; :meth:`get` reads
    them as httpx's headers are read."""

    __slots__ = ()

    def first(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (lower case)."""
        for key, value in self:
            if key == name:  # (servers mostly send lower case)
                return value
        for key, value in self:
            if key.lower() == name:
                return value
        return None

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of header ``name`` as text, else ``default``."""
        value = self.first(name.lower().encode("latin-1"))
        return default if value is None else value.decode("latin-1")


class PooledResponse:
    """One response on a pooled connection, for the one request that got it.

    Read as httpx's responses are (``status_code``, ``headers``, :meth:`aiter_bytes`), or
    at once (:meth:`read_now`).  The connection goes back to the pool at the end of the
    body; :meth:`close` before the end closes it (which is also how a 2026-07-28 request
    is cancelled).  Each request gets a response object of its own, so a late or second
    close, after the connection went on to serve another request, touches nothing."""

    __slots__ = ("_conn", "_lease", "headers", "status_code")

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self._lease = conn.lease
        self.status_code = conn.status_code
        self.headers = conn.headers

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives; at its end the connection is back in the pool."""
        return self._conn.aiter_bytes(self._lease)

    def read_now(self, limit: int) -> bytes | None:
        """The whole body when it is here already, in one piece and within ``limit``
        bytes (the usual small answer: no coroutine needed), else None (read it with
        :meth:`aiter_bytes`, or the client's ``read_body``).  A body returned ends the
        response: the connection is back in the pool."""
        conn = self._conn
        return conn.read_now(limit) if conn.lease == self._lease and conn.leased else None

    def extend(self) -> None:
        """The request's deadline (:meth:`Http11Pool.request`) pushed back to its timeout
        from now (an upstream's progress keeps a slow call alive)."""
        conn = self._conn
        if conn.lease == self._lease:
            conn.extend()

    def close(self) -> None:
        """Done with the response: a body not read to its end closes its connection;
        otherwise it does nothing.  (Synchronous: no coroutine needed.)"""
        conn = self._conn
        if conn.lease == self._lease and conn.leased:  # (not read to its end: unusable)
            conn._drop()
            conn.pool._release(conn)


class _Connection(asyncio.Protocol):
    """One keep-alive connection and the response it is reading now.

    An asyncio protocol feeding httptools (the socket is not read while more than
    :data:`HIGH_WATER` bytes wait unread); it wakes the one task reading.  ``lease``
    counts the requests it served: a :class:`PooledResponse` acts only while the lease
    it was made for is the current one."""

    def __init__(self, pool: Http11Pool, key: tuple[str, int]) -> None:
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.parser: Any = httptools.HttpResponseParser(self)
        self.status_code = 0
        self.headers = ResponseHeaders()
        self.headers_done = False
        self.keep_alive = False
        self.complete = False
        self.pending: list[bytes] = []
        self.buffered = 0
        self.paused = False
        self.received_any = False
        #: Bytes read while the current response's head is not complete.
        self.head_size = 0
        self.closed = False
        #: Whether a holder has the current response (from request() to its end), and
        #: how many requests were given this connection (the current one's number).
        self.leased = False
        self.lease = 0
        self.error: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None
        #: When its current (or last) request started, on the loop's clock.
        self.used_at = 0.0

    # asyncio protocol ------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received_any = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = httpx.RemoteProtocolError(f"invalid HTTP response: {exc}")
            self._drop()
        if not self.headers_done:  # (counted as it arrives: httptools would keep it all)
            self.head_size += len(data)
            if self.head_size > MAX_HEAD_BYTES and self.error is None:
                self.error = httpx.RemoteProtocolError(
                    f"the response head is larger than {MAX_HEAD_BYTES} bytes"
                )
                self._drop()
        if self.buffered > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        waiter = self.waiter  # (_wake, inline: once per read of the socket)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    # httptools callbacks (the pool resets the response before each request) ---------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        # Asked now: once the message is complete the parser has reset for the next.
        self.status_code = self.parser.get_status_code()
        if self.status_code < 200:  # an interim answer: the real one follows
            self.headers = ResponseHeaders()
            return
        self.headers_done = True
        self.keep_alive = bool(self.parser.should_keep_alive())

    def on_body(self, body: bytes) -> None:
        self.pending.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        self.complete = self.headers_done  # (not an interim answer's end)

    # the response, to its holder ---------------------------------------------------
    async def aiter_bytes(self, lease: int) -> AsyncIterator[bytes]:
        """Lease ``lease``'s body as it arrives; at its end the connection is back in the
        pool (and the next request may have it before this generator is closed)."""
        while self.leased and self.lease == lease:
            if self.pending:  # (again after each yield: more may have come meanwhile)
                for chunk in self._take():
                    yield chunk
            elif self.complete:
                self.pool._release(self)
                return
            elif self.error is not None:  # (an invalid answer, a deadline passed)
                raise self.error
            elif self.closed:
                if any(name.lower() in _FRAMING for name, _ in self.headers):
                    raise httpx.RemoteProtocolError("the server closed the connection mid-response")
                self.complete = True  # the body ran to EOF, as its headers announced
            else:  # until more bytes were parsed, or the connection closed
                self.waiter = asyncio.get_running_loop().create_future()
                try:
                    await self.waiter
                finally:
                    self.waiter = None

    def read_now(self, limit: int) -> bytes | None:
        """:meth:`PooledResponse.read_now` of the current lease."""
        if not self.complete or len(self.pending) != 1 or self.buffered > limit:
            return None
        body = self.pending[0]  # (_take(), inline)
        self.pending, self.buffered = [], 0
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.transport.resume_reading()
        self.pool._release(self)
        return body

    def extend(self) -> None:
        """:meth:`PooledResponse.extend` of the current lease."""
        timed = self.pool._timed
        deadline = timed.get(self)
        if deadline is not None:
            timed[self] = (asyncio.get_running_loop().time() + deadline[1], deadline[1])

    # -----------------------------------------------------------------------------
    def _take(self) -> list[bytes]:
        chunks, self.pending, self.buffered = self.pending, [], 0
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.transport.resume_reading()
        return chunks

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _expire(self, timeout: float) -> None:
        """The request passed its deadline: its reader raises :class:`DeadlineExceeded`,
        and closing the connection cancels the request."""
        self.error = DeadlineExceeded(f"no answer within {timeout:g}s")
        self._drop()
        self._wake()

    def _drop(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class _SlotWait(asyncio.Future[None]):
    """A request's wait for a free connection: a deadline ends it as it ends a response."""

    @property
    def closed(self) -> bool:
        return self.done()

    def _expire(self, timeout: float) -> None:
        self.set_exception(DeadlineExceeded(f"no connection free within {timeout:g}s"))


class Http11Pool:
    """Keep-alive HTTP/1.1 connections per (host, port), on the running asyncio loop.

    ``max_connections`` bounds the connections in use at once (requests beyond it
    wait); ``max_idle`` how many idle ones are kept per host.  Raises httpx's exception
    types (``ConnectError``, ``RemoteProtocolError``...; :class:`DeadlineExceeded` is a
    ``TimeoutException``), which both of its users already map.
    """

    def __init__(self, *, max_connections: int = 256, max_idle: int = 64) -> None:
        if not available():
            raise RuntimeError("Http11Pool needs httptools (pip install 'mcpkit[fast]')")
        self._idle: defaultdict[tuple[str, int], deque[_Connection]] = defaultdict(deque)
        #: The bound on connections in use: free slots, and the requests waiting for one
        #: in arrival order (:meth:`_wait_for_slot`).
        self._free = max_connections
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._max_idle = max_idle
        self._closed = False
        #: Requests to write at the end of the loop's current step (:meth:`_flush_writes`),
        #: and the loop that will write them (None: none held).  One loop at a time.
        self._writes: list[tuple[_Connection, bytes]] = []
        self._flushing: asyncio.AbstractEventLoop | None = None
        #: Every deadline of the pool, in one place: what it ends -> (when, on the loop's
        #: clock; the timeout it came from), swept by one timer while there are any, on
        #: the loop it runs on.
        self._timed: dict[_Connection | _SlotWait, tuple[float, float]] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweeping: asyncio.AbstractEventLoop | None = None

    async def request(
        self,
        host: str,
        port: int,
        data: bytes,
        *,
        connect_timeout: float | None = None,
        deadline: float | None = None,
    ) -> PooledResponse:
        """Write one serialized request (``data``) and read the response's head.

        ``deadline``: seconds the whole exchange may take, from now (a wait for a free
        connection included) to the end of its body (:meth:`PooledResponse.extend`
        pushes it back); past it the connection is closed (which cancels a 2026-07-28
        request) and its reader raises :class:`DeadlineExceeded` (a wait for a slot ends
        with it too).  One timer per pool checks every deadline, so a request ends up to
        one tick (a twentieth of its timeout, at most a second) after its deadline,
        never before.
        (One coroutine, no helper: a forwarded call resumes it on every wake-up.)"""
        loop = asyncio.get_running_loop()
        now = loop.time()
        free = self._free > 0 and not self._waiters
        if free:
            self._free -= 1
        else:  # every connection it may open is in use
            await self._wait_for_slot(loop, now, deadline)
        key = (host, port)
        try:
            for attempt in (0, 1):
                # The freshest idle connection; one closed, or whose last request started
                # more than MAX_IDLE_S ago (it may have been idle that long), is dropped.
                idle = self._idle[key]
                conn = idle.pop() if idle else None
                while conn is not None and (conn.closed or now - conn.used_at > MAX_IDLE_S):
                    conn._drop()
                    conn = idle.pop() if idle else None
                reused = conn is not None
                if conn is None:
                    conn = await self._connect(key, connect_timeout)
                else:  # ready for its next response
                    conn.headers, conn.headers_done, conn.complete = ResponseHeaders(), False, False
                    conn.received_any, conn.head_size = False, 0
                conn.used_at = now
                if deadline is not None:
                    self._timed[conn] = (now + deadline, deadline)
                    if self._sweeper is None or self._sweeping is not loop:
                        self._start_sweeping(loop)
                try:
                    if conn.transport is None or conn.closed:
                        raise httpx.WriteError("connection closed")
                    if not free:
                        conn.transport.write(data)
                    else:  # held to the end of this loop step (_flush_writes)
                        if self._flushing is not loop:  # the first of this step
                            self._writes, self._flushing = [], loop  # (a stopped loop's go)
                            loop.call_soon(self._flush_writes)
                        self._writes.append((conn, data))
                    while not conn.headers_done and not conn.closed:
                        if conn.error is not None:  # (as aiter_bytes waits, inline)
                            raise conn.error
                        conn.waiter = waiter = loop.create_future()
                        try:
                            await waiter
                        finally:
                            conn.waiter = None
                    if conn.error is not None:
                        raise conn.error
                except BaseException:
                    conn._drop()
                    raise
                if not conn.headers_done:
                    conn._drop()
                    if reused and attempt == 0 and not conn.received_any:
                        continue  # closed while idle: the server never saw the request
                    raise httpx.RemoteProtocolError(
                        "the server closed the connection without answering"
                    )
                conn.leased = True
                conn.lease += 1
                return PooledResponse(conn)
            raise AssertionError("unreachable")  # pragma: no cover
        except BaseException:
            self._release_slot()
            raise

    async def _wait_for_slot(
        self, loop: asyncio.AbstractEventLoop, now: float, deadline: float | None
    ) -> None:
        """Until a releasing request hands this one its slot, in arrival order; past
        ``deadline`` seconds :class:`DeadlineExceeded` (the sweeper's).  A slot handed
        over just as the wait ends (cancelled, or past its deadline) passes to the next
        request."""
        waiter = _SlotWait(loop=loop)
        self._waiters.append(waiter)
        if deadline is not None:
            self._timed[waiter] = (now + deadline, deadline)
            if self._sweeper is None or self._sweeping is not loop:
                self._start_sweeping(loop)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release_slot()
            elif waiter in self._waiters:  # (a release may have passed it over already)
                self._waiters.remove(waiter)
            raise
        finally:
            self._timed.pop(waiter, None)

    def _release_slot(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

    def _start_sweeping(self, loop: asyncio.AbstractEventLoop) -> None:
        # (A sweeper of another loop stopped with it; this one takes over its deadlines.)
        self._sweeping = loop
        tick = max(min(1.0, min(timeout for _, timeout in self._timed.values()) / 20), 0.005)
        self._sweeper = loop.call_later(tick, self._sweep)

    def _sweep(self) -> None:
        """End the exchanges and waits past their deadline; forget those ended."""
        loop = self._sweeping
        assert loop is not None
        now = loop.time()
        self._sweeper = None
        for held, (expires, timeout) in list(self._timed.items()):
            if held.closed or expires <= now:
                del self._timed[held]
                if not held.closed:
                    held._expire(timeout)
        if self._timed:
            self._start_sweeping(loop)

    def _flush_writes(self) -> None:
        """Write the requests held in this step of the loop (:meth:`request`) together:
        the upstream reads them in one wake-up.  A connection closed meanwhile (the
        request was cancelled) is not written to."""
        writes, self._writes, self._flushing = self._writes, [], None
        for conn, data in writes:
            if not conn.closed and conn.transport is not None:
                conn.transport.write(data)

    async def _connect(self, key: tuple[str, int], timeout: float | None) -> _Connection:
        host, port = key
        try:
            with anyio.fail_after(timeout):
                _, conn = await asyncio.get_running_loop().create_connection(
                    lambda: _Connection(self, key), host, port
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return conn

    def _release(self, conn: _Connection) -> None:
        conn.leased = False
        self._timed.pop(conn, None)
        if self._waiters:
            self._release_slot()
        else:  # (nobody waits, the usual case: no call)
            self._free += 1
        idle = self._idle[conn.key]
        if (  # (done, and reusable: kept alive, not closed, no error, room among the idle)
            self._closed
            or not conn.complete
            or not conn.keep_alive
            or conn.closed
            or conn.error is not None
            or len(idle) >= self._max_idle
        ):
            conn._drop()
            return
        idle.append(conn)

    def close(self) -> None:
        """Close the idle connections; those in use close as their responses end."""
        self._closed = True
        idle, self._idle = self._idle, defaultdict(deque)
        for conns in idle.values():
            for conn in conns:
                conn._drop()
