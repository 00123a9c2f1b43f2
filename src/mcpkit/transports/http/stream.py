"""One response to one POST: JSON if the answer comes first, SSE if anything else does.

The server may answer a request with ``application/json`` or ``text/event-stream``.  We
decide lazily: a request whose handler only returns a result gets a plain JSON reply
(cheapest for both sides); the moment the handler emits a notification or (legacy) a
server->client request before its result, the reply becomes an SSE stream.  Legacy
streams give every event an id from the session's event store so the client can resume
after a disconnect, and open with a priming event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...protocol.sse import encode_event, priming_event
from ...types.codec import encode_message
from .asgi import JSON_HEADERS, Send

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
        "on_detach",
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
        self.on_detach: Callable[[], None] | None = None

    @property
    def streaming(self) -> bool:
        return self._started

    @property
    def log(self) -> EventLog | None:
        """The stream's event log, if it has one yet."""
        return self._log

    @property
    def done(self) -> bool:
        return self._done

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
        if self.on_detach is not None:
            self.on_detach()

    async def close(self) -> None:
        """Finish an SSE response without a final message (listen streams, aborts)."""
        if self._done:
            return
        self._done = True
        if self._started:
            await self._write(b"", more=False)
        elif self._sse_ok:
            # Nothing was sent (e.g. the request was cancelled): an empty event stream, so
            # the HTTP exchange still completes and no response is invented.
            await self._safe_send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": SSE_HEADERS + self._extra_headers,
                }
            )
            await self._safe_send({"type": "http.response.body", "body": b""})
        else:
            await self._safe_send(
                {"type": "http.response.start", "status": 202, "headers": self._extra_headers}
            )
            await self._safe_send({"type": "http.response.body", "body": b""})
