"""The bounded SSE decoder (``protocol.sse.SseDecoder``): the events httpx-sse's public
``EventSource`` gives, and a line or an event over the limit refused as soon as it passes
the limit (over a socket: ``test_sse_limits.py``)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import httpx
import pytest

from mcpkit.protocol.sse import LINE_ALLOWANCE, SseDecoder, SseEvent, SseLimitError
from mcpkit.transports.client_http_wire import sse_events

LIMIT = 1024 * 1024

# An SSE body cut at awkward places: inside a field name, between CR and LF, inside a
# multi-byte character, plus comments, ids, retry, multi-line data and an invalid byte.
SSE_BODY = (
    b": comment\r\nid: 0\r\nretry: 1000\r\ndata:\r\n\r\n"
    b'event: message\ndata: {"a": "caf\xc3\xa9"}\ndata: second line\n\n'
    b"data: bad \xff byte\nid: 7\n\n"
    b"data: no blank line at the end"
)
CUTS = [0, 3, 11, 12, 40, 57, 58, 59, 90, len(SSE_BODY)]


async def _chunks() -> AsyncIterator[bytes]:
    for start, end in itertools.pairwise(CUTS):
        yield SSE_BODY[start:end]


@pytest.mark.anyio
async def test_events_match_httpx_sse_public_event_source() -> None:
    from httpx_sse import EventSource

    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=SSE_BODY)
    public = [(e.event, e.data, e.id, e.retry) async for e in EventSource(response).aiter_sse()]
    ours = [tuple(e) async for e in sse_events(_chunks(), LIMIT)]
    assert ours == public
    assert [e[1] for e in public][1:] == ['{"a": "café"}\nsecond line', "bad \ufffd byte"]


def test_a_line_over_the_limit_is_refused_before_it_ends() -> None:
    decoder = SseDecoder(1000)
    assert decoder.feed(b"data: " + b"x" * 500) == []
    assert decoder.feed(b"x" * 500) == []  # within the limit plus the field's allowance
    with pytest.raises(SseLimitError, match="line larger than the limit of 1000 bytes"):
        decoder.feed(b"x" * (LINE_ALLOWANCE + 1))


def test_an_event_of_many_lines_over_the_limit_is_refused() -> None:
    decoder = SseDecoder(1000)
    assert decoder.feed(b"data: " + b"x" * 600 + b"\n") == []
    with pytest.raises(SseLimitError, match="event larger than the limit of 1000 bytes") as info:
        decoder.feed(b"data: " + b"x" * 600 + b"\n")
    assert info.value.limit == 1000


def test_an_event_exactly_at_the_limit_passes_and_the_next_starts_afresh() -> None:
    decoder = SseDecoder(1000)
    line = b"data: " + b"x" * 498 + b"\n"  # two lines: 498 + LF + 498 = 997 bytes
    event = b"id: 9\r\n" + line + line + b"data: xx\r\n\r\n"  # ... + LF + 2 = 1000
    for _ in range(3):  # each event is measured on its own
        assert decoder.feed(event) == [
            SseEvent("message", "\n".join(["x" * 498, "x" * 498, "xx"]), "9", None)
        ]


def test_a_crlf_split_across_chunks_ends_one_line() -> None:
    decoder = SseDecoder(100)
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == [SseEvent("message", "a", "", None)]
    assert decoder.feed(b"\ndata: b\n\n") == [SseEvent("message", "b", "", None)]
