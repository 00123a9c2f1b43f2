"""A pooled HTTP/1.1 client wire, parsed by httptools: the cheap upstream hop.

A gateway forwards every call over a keep-alive connection to its upstream; httpx's
default transport (httpcore) walks and probes every pooled connection per request, so
its cost grows with the concurrency (``bench/RESULTS.md``).  :class:`Http11Pool` keeps
keep-alive connections as asyncio protocols that feed httptools (the C parser uvicorn
uses) as bytes arrive: a request is written with one ``send``, a response head is bounded
as it arrives (:mod:`.http11_connection`), a connection is reused only after its previous
response was read to the end, a close while idle is seen as it happens, and one idle for
longer than servers usually keep them is dropped unused.  A request whose reused
connection turns out closed before any byte of the answer is retried once on a fresh one
(the server closed it idle, so it never saw the request).

It is the Streamable HTTP client's pooled wire (:mod:`.client_http`, given a pool): POSTs
to an ``http://`` URL on asyncio, their answers read by the client's rules; the fast lane
(:mod:`mcpkit.compose.lane`) is the same client's shortest path onto it.  Everything else
(the other methods, ``https://``, trio) goes over httpx.

Cancellation and deadlines close the connection: in the 2026-07-28 era closing the
response stream *is* how a client cancels a request.  asyncio only.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

import anyio
import httpx

from ..runtime.runner import on_asyncio
from .http11_connection import DeadlineExceeded, Http11Connection, available

__all__ = ["DeadlineExceeded", "Http11Pool", "RawResponse", "available"]

#: Connections idle for longer than this are dropped unused (servers close idle
#: keep-alive connections after a few seconds: uvicorn after 5 s; a close we saw drops
#: it anyway).
MAX_IDLE_S = 4.0


class RawResponse:
    """One response off the pool: status and headers now, the body as it arrives.

    The connection goes back to the pool when the body was read to its end; closing
    the response before that closes the connection (which is also how a 2026-07-28
    request is cancelled)."""

    __slots__ = ("_conn", "_pool", "headers", "status")

    def __init__(self, pool: Http11Pool, conn: Http11Connection):
        self._pool = pool
        self._conn: Http11Connection | None = conn
        self.status: int = conn.status
        self.headers: list[tuple[bytes, bytes]] = conn.headers

    def extend(self) -> None:
        """The request's deadline (:meth:`Http11Pool.request`) pushed back to its
        timeout from now (an upstream's progress keeps a slow call alive)."""
        conn = self._conn
        if conn is not None and conn.timeout:
            conn.expires = asyncio.get_running_loop().time() + conn.timeout

    def header(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (lower case)."""
        headers = self.headers
        for key, value in headers:
            if key == name:  # (servers mostly send lower case)
                return value
        for key, value in headers:
            if key.lower() == name:
                return value
        return None

    async def chunks(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        while True:
            if conn.pending:
                for chunk in conn.take():
                    yield chunk
            if conn.complete:
                break
            if conn.closed:
                framing = (b"content-length", b"transfer-encoding")
                if not any(name.lower() in framing for name, _ in conn.headers):
                    conn.complete = True  # the body ran to EOF, as its headers announced
                    continue
                raise httpx.RemoteProtocolError("the server closed the connection mid-response")
            await conn.wait()
        self._conn = None
        self._pool._release(conn)

    def read_now(self, limit: int) -> bytes | None:
        """The whole body when it is here already, in one piece and within ``limit``
        bytes (the usual small answer: no coroutine needed), else None (read its
        :meth:`chunks`, or the client's ``read_body`` of it as a ``PooledAnswer``)."""
        conn = self._conn
        if conn is None or not conn.complete or len(conn.pending) != 1 or conn.buffered > limit:
            return None
        body = conn.pending[0]  # (take(), inline)
        conn.pending, conn.buffered = [], 0
        if conn.paused and conn.transport is not None and not conn.closed:
            conn.paused = False
            conn.transport.resume_reading()
        self._conn = None
        self._pool._release(conn)
        return body

    def close(self) -> None:
        """Done with the response: a body not read to its end closes its connection.
        (Synchronous: the fast lane calls it after every answer, no coroutine needed.)"""
        conn, self._conn = self._conn, None
        if conn is not None:  # not read to the end: the connection is unusable
            conn.close()
            self._pool._release(conn)


class Http11Pool:
    """Keep-alive HTTP/1.1 connections per (host, port), on the running asyncio loop.

    ``max_connections`` bounds the connections in use at once (requests beyond it
    wait); ``max_idle`` how many idle ones are kept per host.  Raises httpx's exception
    types (``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``...), which both of
    its users already map.
    """

    def __init__(self, *, max_connections: int = 256, max_idle: int = 64) -> None:
        if not available():
            raise RuntimeError("Http11Pool needs httptools (pip install 'mcpkit[fast]')")
        self._idle: dict[tuple[str, int], deque[Http11Connection]] = {}
        #: The bound on connections in use: free slots, and the requests waiting for one
        #: in arrival order (:meth:`_wait_for_slot`).
        self._free = max_connections
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._max_idle = max_idle
        self._closed = False
        #: Requests to write at the end of the loop's current step (:meth:`_flush_writes`),
        #: and the loop that will write them (None: none held).  One loop at a time.
        self._writes: list[tuple[Http11Connection, bytes]] = []
        self._flushing: asyncio.AbstractEventLoop | None = None
        #: The connections carrying requests with a deadline (an ordered set), swept by
        #: one timer while there are any, on the loop it runs on.
        self._timed: dict[Http11Connection, None] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweeping: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def runs_here() -> bool:
        """Whether the pool can carry requests from the running event loop (asyncio's
        only: under trio its users take httpx)."""
        return on_asyncio()

    async def request(
        self,
        host: str,
        port: int,
        data: bytes,
        *,
        connect_timeout: float | None = None,
        deadline: float | None = None,
    ) -> RawResponse:
        """Write one serialized request (``data``) and read the response's head.

        ``deadline``: seconds the whole exchange may take, from now (a wait for a free
        connection included) to the end of its body (:meth:`RawResponse.extend` pushes
        it back); past it the connection is closed (which cancels a 2026-07-28 request)
        and its reader raises :class:`DeadlineExceeded` (a wait for a slot ends with it
        too).  One timer per pool checks the deadlines of connections, so a request ends
        up to one tick (a twentieth of its timeout, at most a second) after its deadline,
        never before.
        (One coroutine, no helper: a forwarded call resumes it on every wake-up.)"""
        loop = asyncio.get_running_loop()
        now = loop.time()
        free = self._free > 0 and not self._waiters
        if free:
            self._free -= 1
        else:  # every connection it may open is in use
            await self._wait_for_slot(loop, deadline)
        key = (host, port)
        try:
            for attempt in (0, 1):
                # The freshest idle connection; one closed, or whose last request started
                # more than MAX_IDLE_S ago (it may have been idle that long), is dropped.
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
                while conn is not None and (conn.closed or now - conn.used_at > MAX_IDLE_S):
                    conn.close()
                    conn = idle.pop() if idle else None
                reused = conn is not None
                if conn is None:
                    conn = await self._connect(key, connect_timeout)
                else:  # ready for its next response
                    conn.headers, conn.headers_done, conn.complete = [], False, False
                    conn.received_any, conn.head_size, conn.timeout = False, 0, 0.0
                conn.used_at = now
                if deadline is not None:
                    conn.expires, conn.timeout = now + deadline, deadline
                    self._timed[conn] = None
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
                        if conn.error is not None:  # (wait(), inline)
                            raise conn.error
                        conn.waiter = waiter = loop.create_future()
                        try:
                            await waiter
                        finally:
                            conn.waiter = None
                    if conn.error is not None:
                        raise conn.error
                except BaseException:
                    conn.close()
                    raise
                if not conn.headers_done:
                    conn.close()
                    if reused and attempt == 0 and not conn.received_any:
                        continue  # closed while idle: the server never saw the request
                    raise httpx.RemoteProtocolError(
                        "the server closed the connection without answering"
                    )
                return RawResponse(self, conn)
            raise AssertionError("unreachable")  # pragma: no cover
        except BaseException:
            self._release_slot()
            raise

    async def _wait_for_slot(self, loop: asyncio.AbstractEventLoop, deadline: float | None) -> None:
        """Until a releasing request hands this one its slot, in arrival order; past
        ``deadline`` seconds :class:`DeadlineExceeded`.  A slot handed over just as the
        wait ends (cancelled, or past its deadline) passes to the next request."""
        waiter = loop.create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(deadline):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self._release_slot()
            elif waiter in self._waiters:  # (a release may have passed it over already)
                self._waiters.remove(waiter)
            if isinstance(exc, TimeoutError):
                raise DeadlineExceeded(f"no connection free within {deadline:g}s") from None
            raise

    def _release_slot(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

    def _start_sweeping(self, loop: asyncio.AbstractEventLoop) -> None:
        # (A sweeper of another loop stopped with it, its requests with it.)
        self._timed = {c: None for c in self._timed if not c.closed}
        self._sweeping = loop
        if not self._timed:
            self._sweeper = None
            return
        tick = max(min(1.0, min(c.timeout for c in self._timed) / 20), 0.005)
        self._sweeper = loop.call_later(tick, self._sweep)

    def _sweep(self) -> None:
        """Close the connections whose requests passed their deadline; forget those done."""
        loop = self._sweeping
        assert loop is not None
        now = loop.time()
        ended = [c for c in self._timed if c.closed or c.expires <= now]
        for conn in ended:
            del self._timed[conn]
            if not conn.closed:
                conn.expire()
        self._sweeper = None
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

    async def _connect(self, key: tuple[str, int], timeout: float | None) -> Http11Connection:
        host, port = key
        loop = asyncio.get_running_loop()
        try:
            with anyio.fail_after(timeout):
                _, conn = await loop.create_connection(lambda: Http11Connection(key), host, port)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return conn

    def _release(self, conn: Http11Connection) -> None:
        self._timed.pop(conn, None)
        if self._waiters:
            self._release_slot()
        else:  # (nobody waits, the usual case: no call)
            self._free += 1
        if (  # (done, and reusable: kept alive, not closed, no error)
            self._closed
            or not conn.complete
            or not conn.keep_alive
            or conn.closed
            or conn.error is not None
        ):
            conn.close()
            return
        idle = self._idle.get(conn.key)
        if idle is None:
            idle = self._idle[conn.key] = deque()
        if len(idle) >= self._max_idle:
            conn.close()
            return
        idle.append(conn)

    def close(self) -> None:
        """Close the idle connections; those in use close as their responses end."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
