"""One response to one POST: JSON if the answer comes first, SSE if anything else does.

The server may answer a request with ``application/json`` or ``text/event-stream``.  We
decide lazily: a request whose handler only returns a result gets a plain JSON reply
(cheapest for both sides); the moment the handler emits a notification or (legacy) a
server->client request before its result, the reply becomes an SSE stream.  Legacy
streams give every event an id from the session's event store so the client can resume
after a disconnect, and open with a priming event.

Long-lived streams (``subscriptions/listen``, the legacy GET stream) are a
:class:`StreamSink` each: the change bus writes to them as it publishes, and the stream's
own task only waits for its client to leave; one :class:`KeepAlive` timer serves all of
an app's idle streams.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

import anyio

from ...protocol.sse import KEEPALIVE, encode_event, priming_event
from ...runtime.changes import ChangeEvent
from ...runtime.compat import send_steps_anywhere
from ...runtime.runner import resume
from ...types.codec import encode_message
from .asgi import JSON_HEADERS, Receive, Send

log = logging.getLogger("mcpkit.http")

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


async def send_json_answer(
    send: Send,
    message: dict[str, Any],
    status: int = 200,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> bool:
    """Answer with one JSON body (the response to a request that streamed nothing before
    it).  False when the client had already gone (the send raised OSError)."""
    data = encode_message(message)
    length = (b"content-length", str(len(data)).encode())
    if headers:
        head = JSON_HEADERS + headers
        head.append(length)
    else:
        head = [JSON_HEADERS[0], length]
    try:
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": data})
    except OSError:
        return False
    return True


class EventLog:
    """Where a resumable stream's events also go (see :mod:`.legacy`)."""

    def append(self, data: bytes, final: bool) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def priming_id(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


class ResponseWriter:
    __slots__ = (
        "_detached",
        "_done",
        "_extra_headers",
        "_log",
        "_new_log",
        "_retry_ms",
        "_send",
        "_sse_ok",
        "_started",
    )

    def __init__(
        self,
        send: Send,
        sse_ok: bool,
        *,
        extra_headers: list[tuple[bytes, bytes]] | None = None,
        new_log: Callable[[], EventLog] | None = None,
        retry_ms: int | None = None,
    ) -> None:
        """``new_log``: makes the log a stream's events also go to (for resumption), called
        when the response becomes a stream (a plain JSON answer has nothing to resume)."""
        self._send = send
        self._sse_ok = sse_ok
        self._extra_headers = extra_headers or []
        self._log: EventLog | None = None
        self._new_log = new_log
        self._retry_ms = retry_ms
        self._started = False
        self._done = False
        self._detached = False

    @property
    def log(self) -> EventLog | None:
        """The stream's event log, if it has one yet."""
        return self._log

    async def _start_sse(self) -> None:
        self._started = True
        if self._new_log is not None:
            self._log = self._new_log()
        await self._safe_send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": SSE_HEADERS + self._extra_headers,
            }
        )
        if self._log is not None:
            await self._write(priming_event(self._log.priming_id(), self._retry_ms))

    async def _write(self, chunk: bytes, more: bool = True) -> None:
        if self._detached:
            return
        await self._safe_send({"type": "http.response.body", "body": chunk, "more_body": more})

    async def _safe_send(self, message: dict[str, Any]) -> None:
        try:
            await self._send(message)
        except OSError:
            self._detached = True

    async def message(self, message: dict[str, Any]) -> bool:
        """Send a notification or server request before the final answer.

        Returns False when it could not be delivered (client does not accept SSE and no
        event log keeps it).
        """
        if self._done:
            return False
        try:
            data = encode_message(message)
        except ValueError:
            return False
        if not self._started:
            if not self._sse_ok:
                return False
            await self._start_sse()
        event_id = self._log.append(data, final=False) if self._log is not None else None
        await self._write(encode_event(data, event_id=event_id))
        return True

    async def final(
        self,
        message: dict[str, Any],
        status: int = 200,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """The response to the request; ends the HTTP response.  ``status`` and
        ``headers`` only apply when the reply is plain JSON (a stream already said 200)."""
        if self._done:
            return
        self._done = True
        if not self._started:
            extra = self._extra_headers + headers if headers else self._extra_headers
            if not await send_json_answer(self._send, message, status, extra):
                self._detached = True
            return
        data = encode_message(message)
        event_id = self._log.append(data, final=True) if self._log is not None else None
        await self._write(encode_event(data, event_id=event_id), more=False)

    async def detach(self, retry_ms: int | None = None) -> None:
        """End the HTTP response now but keep logging events for a later resume."""
        if self._detached or self._done:
            return
        if not self._started:
            if not self._sse_ok or self._new_log is None:
                return
            self._retry_ms = retry_ms if retry_ms is not None else self._retry_ms
            await self._start_sse()
        elif retry_ms is not None:
            await self._write(b"retry: " + str(int(retry_ms)).encode() + b"\n\n")
        await self._write(b"", more=False)
        self._detached = True

    async def close(self) -> None:
        """Finish an SSE response without a final message (listen streams, aborts)."""
        if self._done:
            return
        self._done = True
        if self._started:
            await self._write(b"", more=False)
            return
        # Nothing was sent (the request was cancelled): an empty event stream, or a 202 to a
        # client that takes none, so the HTTP exchange completes and no response is invented.
        sse = self._sse_ok
        head = SSE_HEADERS + self._extra_headers if sse else self._extra_headers
        await self._safe_send(
            {"type": "http.response.start", "status": 200 if sse else 202, "headers": head}
        )
        await self._safe_send({"type": "http.response.body", "body": b""})


#: SSE framing of one encoded message on a stream without event ids (the codec never
#: writes a raw newline, so one ``data:`` line holds it: see :func:`encode_event`).
_EVENT_HEAD = b"event: message\ndata: "
_EVENT_TAIL = b"\n\n"
#: Chunks held for a stream whose client reads slower than events come; past this it
#: loses events (a list_changed is idempotent: the client re-lists) rather than growing.
PENDING_LIMIT = 64


class StreamSink:
    """The write side of one long-lived SSE stream, subscribed to the change bus.

    Why it looks like this: 10,000 idle streams must cost little memory and a change must
    reach all of them fast.  So a stream is its request's task alone, parked in
    ``receive()`` (which also tells it at once when the client goes away); it holds no
    buffer, timer or helper task while idle.  :meth:`offer`, called by the bus as it
    publishes, writes the event out then and there: under uvicorn ``send`` is run by hand
    and nearly always completes at once (only a full socket buffer makes it wait), so the
    parked task is not even woken.  When ``send`` must wait, or the server's ``send``
    cannot be run outside its task, chunks queue (up to :data:`PENDING_LIMIT`) and the
    stream's task is woken to write them, in order.  Keep-alive comments come from the
    app's shared :class:`KeepAlive` through the same path.
    """

    __slots__ = (
        "_clock",
        "_coro",
        "_direct",
        "_pending",
        "_scope",
        "_send",
        "_stopped",
        "_waiting",
        "_yielded",
        "closed",
        "encode",
        "last_tick",
        "on_interval",
        "resources",
    )

    def __init__(
        self,
        send: Send,
        encode: Callable[[ChangeEvent], bytes | None],
        clock: KeepAlive,
        on_interval: Callable[[], None] | None = None,
    ) -> None:
        """``encode``: the event's message for this stream (None: not for it);
        ``on_interval``: called once per keep-alive interval while the stream is open."""
        self._send = send
        self._direct = send_steps_anywhere(send)
        self.encode = encode
        #: Chunks waiting for the stream's task (None: nothing queued, write directly).
        #: It starts as a queue: events that come before the stream's first message (the
        #: listen acknowledgement) wait for it.
        self._pending: deque[bytes] | None = deque()
        self._coro: Any = None  # a send that began in offer() and had to wait
        self._yielded: Any = None
        self._scope: anyio.CancelScope | None = None
        self._waiting = False
        self._stopped = False
        self.closed = False
        self._clock = clock
        self.last_tick = clock.count
        self.on_interval = on_interval
        #: Resource URIs this stream wants updates of (set by the bus).
        self.resources: tuple[str, ...] = ()

    def offer(self, event: ChangeEvent) -> None:
        if self.closed:
            return
        data = self.encode(event)
        if data is not None:
            self.push(b"".join((_EVENT_HEAD, data, _EVENT_TAIL)))

    def push(self, chunk: bytes) -> bool:
        """Write ``chunk`` (a whole SSE event) now or after what is queued; False when
        the stream is closed or too far behind to take it."""
        if self.closed:
            return False
        pending = self._pending
        if pending is not None:
            if len(pending) >= PENDING_LIMIT:
                return False
            pending.append(chunk)
            return True
        if self._direct:
            # A coroutine: send_steps_anywhere() admitted only uvicorn's ``async def``.
            coro = cast(
                "Coroutine[Any, Any, None]",
                self._send({"type": "http.response.body", "body": chunk, "more_body": True}),
            )
            try:
                yielded = coro.send(None)
            except StopIteration:
                self.last_tick = self._clock.count
                return True
            except Exception as exc:  # the connection is broken: end the stream
                log.debug("listen stream write failed: %r", exc)
                self.closed = True
                self._wake()
                return False
            self._coro, self._yielded = coro, yielded  # waits for the socket to drain
            self._pending = deque()
        else:
            self._pending = deque((chunk,))
        self._wake()
        return True

    def _wake(self) -> None:
        if self._waiting and self._scope is not None:
            self._scope.cancel()

    def cancel(self) -> None:
        """End the stream (server shutdown): :meth:`serve` returns."""
        self._stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def serve(self, receive: Receive) -> None:
        """Hold the stream until its client goes away or :meth:`cancel`: wait in
        ``receive()``, and write what was queued whenever woken for it."""
        while not (self.closed or self._stopped):
            scope = self._scope = anyio.CancelScope()
            with scope:
                if self._pending is not None:
                    try:
                        await self._drain()
                    except OSError:  # servers other than uvicorn may say "gone" so
                        self.closed = True
                else:
                    self._waiting = True
                    try:
                        message = await receive()
                    finally:
                        self._waiting = False
                    if message["type"] == "http.disconnect":
                        self.closed = True
            self._scope = None
        self.closed = True

    async def _drain(self) -> None:
        coro = self._coro
        if coro is not None:
            self._coro = None
            yielded, self._yielded = self._yielded, None
            await resume(coro, yielded)
        pending = self._pending
        while pending:
            chunk = pending.popleft()
            await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
        self._pending = None
        self.last_tick = self._clock.count


class KeepAlive:
    """One timer for all of an app's open streams, instead of one per stream.

    It ticks :data:`STEPS` times per interval while any stream is open (a task in the
    server's task group); a stream that wrote nothing for more than one interval gets a
    ``:`` comment, so proxies keep idle streams open and a comment never comes sooner
    than ``interval`` after the stream's last write, nor much later (at most
    ``interval / STEPS``).
    """

    STEPS = 5
    __slots__ = ("_running", "count", "interval", "sinks")

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.sinks: set[StreamSink] = set()
        #: Ticks so far: a stream notes the count at each write.
        self.count = 0
        self._running = False

    def add(self, sink: StreamSink, spawn: Callable[[Callable[[], Awaitable[None]]], None]) -> None:
        """Keep ``sink`` alive; ``spawn`` starts the timer's task when none runs."""
        self.sinks.add(sink)
        if not self._running:
            self._running = True
            try:
                spawn(self._run)
            except BaseException:
                self._running = False
                raise

    def discard(self, sink: StreamSink) -> None:
        self.sinks.discard(sink)

    async def _run(self) -> None:
        steps = self.STEPS
        try:
            while self.sinks:
                await anyio.sleep(self.interval / steps)
                self.count += 1
                due = self.count - steps  # last wrote more than one interval ago
                whole = self.count % steps == 0
                for sink in tuple(self.sinks):
                    if whole and sink.on_interval is not None:
                        sink.on_interval()
                    if sink.last_tick < due and sink._pending is None:
                        sink.push(KEEPALIVE)
        finally:
            self._running = False
