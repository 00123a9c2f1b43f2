"""Server-Sent Events: encoding (the server side of Streamable HTTP) and a bounded decoder
(every client of an SSE stream: the client transports and the gateway's fast lane).

A JSON-RPC payload from the codec never contains a raw newline, so one ``data:`` line is
always enough when encoding.

Decoding (:class:`SseDecoder`) is fed the body's bytes as they arrive and measures while it
reads: a line, or an event's data, longer than its limit is refused as soon as the limit
is passed (:class:`SseLimitError`), never assembled first.  The memory one stream holds is
therefore its limit plus one chunk.  Events are what the WHATWG ``EventSource`` parser
gives (and httpx-sse's, which the decoder replaced): lines end at CR, LF or CRLF; a
comment line starts with ``:``; ``data`` lines join with LF; ``id`` persists between
events (a value holding NUL is ignored); ``retry`` is kept when it is ASCII digits; an event
that was not ended by a blank line before the stream closed is dropped.  Bytes that are
not UTF-8 are replaced (U+FFFD) when a value is decoded.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "KEEPALIVE",
    "KEEPALIVE_SECONDS",
    "SseDecoder",
    "SseEvent",
    "SseLimitError",
    "encode_event",
    "priming_event",
]

#: An SSE comment: keeps proxies from timing out an idle stream; clients ignore it.
KEEPALIVE = b":\r\n\r\n"
#: How long an SSE stream (modern or legacy, the host page's events) may stay silent before
#: a :data:`KEEPALIVE` goes out; also how often a legacy stream touches its session.
KEEPALIVE_SECONDS = 15.0


def encode_event(
    data: bytes,
    *,
    event_id: str | None = None,
    event: str | None = "message",
    retry_ms: int | None = None,
) -> bytes:
    parts: list[bytes] = []
    if event_id is not None:
        parts.append(b"id: " + event_id.encode() + b"\n")
    if retry_ms is not None:
        parts.append(b"retry: " + str(int(retry_ms)).encode() + b"\n")
    if event is not None:
        parts.append(b"event: " + event.encode() + b"\n")
    if b"\n" in data or b"\r" in data:
        for line in data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
            parts.append(b"data: " + line + b"\n")
    else:
        parts.append(b"data: " + data + b"\n")
    parts.append(b"\n")
    return b"".join(parts)


def priming_event(event_id: str, retry_ms: int | None) -> bytes:
    """An event with an id and empty data: lets a client resume before any real message."""
    head = b"id: " + event_id.encode() + b"\n"
    if retry_ms is not None:
        head += b"retry: " + str(int(retry_ms)).encode() + b"\n"
    return head + b"data: \n\n"


#: Room on a line for a field name and its separator around a value of ``limit`` bytes.
LINE_ALLOWANCE = 64


class SseEvent(NamedTuple):
    """One dispatched event: its type (``"message"`` when none was named), its data lines joined
    with LF, the last event id seen on the stream, and its ``retry`` (None: not given)."""

    event: str
    data: str
    id: str
    retry: int | None


class SseLimitError(ValueError):
    """A line or an event's data passed the decoder's limit; the stream is unusable."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"SSE {what} larger than the limit of {limit} bytes")
        self.what = what
        self.limit = limit


class SseDecoder:
    """Incremental, bounded SSE parsing: :meth:`feed` takes bytes as they arrive and
    returns the events they complete.

    ``limit`` bounds an event's data (its ``data`` values joined); a line may be
    :data:`LINE_ALLOWANCE` bytes longer, for its field name.  Past either,
    :meth:`feed` raises :class:`SseLimitError` at once, with at most ``limit`` plus the
    chunk that crossed it held.  Work is per chunk and per line (bytes methods), never
    per byte."""

    __slots__ = (
        "_after_cr",
        "_data",
        "_data_size",
        "_event",
        "_id",
        "_line_limit",
        "_partial",
        "_partial_size",
        "_retry",
        "limit",
    )

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError("the SSE limit must be a positive number of bytes")
        self.limit = limit
        self._line_limit = limit + LINE_ALLOWANCE
        #: The line still open at the end of the last chunk, in pieces (joined once, when
        #: it ends: a long line arriving in many chunks is not copied over and over).
        self._partial: list[bytes] = []
        self._partial_size = 0
        #: The last chunk ended with CR: an LF starting the next one ends no new line.
        self._after_cr = False
        self._event = b""
        self._data: list[bytes] = []
        self._data_size = 0
        self._id = ""
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events that ``chunk`` completes (raises :class:`SseLimitError`)."""
        if self._after_cr:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._after_cr = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            if chunk:
                self._partial.append(chunk)
                self._partial_size += len(chunk)
                if self._partial_size > self._line_limit:
                    raise SseLimitError("line", self.limit)
            return []
        lines = chunk.split(b"\n")
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
        tail = lines.pop()
        self._partial = [tail] if tail else []
        self._partial_size = len(tail)
        if self._partial_size > self._line_limit:
            raise SseLimitError("line", self.limit)
        events: list[SseEvent] = []
        for line in lines:
            if line:
                self._field(line)
            else:
                event = self._dispatch()
                if event is not None:
                    events.append(event)
        return events

    def _field(self, line: bytes) -> None:
        if len(line) > self._line_limit:
            raise SseLimitError("line", self.limit)
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            # (the LF that joins this value to the previous one counts too)
            self._data_size += len(value) + (1 if self._data else 0)
            if self._data_size > self.limit:
                raise SseLimitError("event", self.limit)
            self._data.append(value)
        elif not name:
            return  # a comment
        elif name == b"event":
            self._event = value
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():  # (ASCII digits only, as the spec says)
            self._retry = int(value)

    def _dispatch(self) -> SseEvent | None:
        """The event a blank line ends (None when nothing was set since the last one)."""
        data = self._data
        if not data and not self._event and not self._id and self._retry is None:
            return None
        event = SseEvent(
            self._event.decode("utf-8", "replace") if self._event else "message",
            (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace"),
            self._id,
            self._retry,
        )
        self._event, self._data, self._data_size, self._retry = b"", [], 0, None
        return event
