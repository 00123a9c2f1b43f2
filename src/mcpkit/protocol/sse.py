"""Server-Sent Events encoding (the server side of Streamable HTTP).

Parsing is the client's job and is done by ``httpx-sse``; this module only writes events.
A JSON-RPC payload from the codec never contains a raw newline, so one ``data:`` line is
always enough.
"""

from __future__ import annotations

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
