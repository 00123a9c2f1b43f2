"""stdio line framing: protocol/framing.LineFramer."""

from __future__ import annotations

import pytest

from mcpkit.protocol.framing import DEFAULT_MAX_LINE, LineFramer, Overflow, frame


def feed_all(framer: LineFramer, chunks: list[bytes]) -> list[bytes | Overflow]:
    out: list[bytes | Overflow] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    return out


def test_one_line_per_newline() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert framer.pending() == 0


def test_partial_line_is_held_until_its_newline() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a":') == []
    assert framer.pending() == 5
    assert framer.feed(b"1}") == []
    assert framer.feed(b"\n") == [b'{"a":1}']
    assert framer.pending() == 0


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_any_chunking_gives_the_same_lines(size: int) -> None:
    data = b'{"id":1}\n{"id":2}\r\n\n{"id":"three"}\n'
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    assert feed_all(LineFramer(), chunks) == [b'{"id":1}', b'{"id":2}', b'{"id":"three"}']


def test_crlf_is_accepted_even_when_split_between_chunks() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\r') == []
    assert framer.feed(b'\n{"b":2}\r\n') == [b'{"a":1}', b'{"b":2}']


def test_only_one_trailing_cr_is_removed() -> None:
    assert LineFramer().feed(b"x\r\r\n") == [b"x\r"]


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"   \n", b"\t\r\n", b"\n\n\n"])
def test_blank_lines_are_skipped(blank: bytes) -> None:
    assert LineFramer().feed(b"a\n" + blank + b"b\n") == [b"a", b"b"]


def test_bytes_after_the_last_newline_are_not_a_line() -> None:
    framer = LineFramer()
    assert framer.feed(b"a\nb") == [b"a"]
    assert framer.pending() == 1


def test_line_at_the_limit_passes_and_one_byte_more_overflows() -> None:
    framer = LineFramer(max_line=8)
    assert framer.feed(b"12345678\n") == [b"12345678"]
    out = framer.feed(b"123456789\n")
    assert out == [Overflow(9)]


def test_overlong_line_in_one_chunk_is_reported_then_framing_recovers() -> None:
    framer = LineFramer(max_line=10)
    out = framer.feed(b"x" * 50 + b"\n" + b'{"ok":1}\n')
    assert out == [Overflow(50), b'{"ok":1}']
    assert framer.pending() == 0


def test_overlong_line_across_chunks_is_never_buffered_beyond_the_limit() -> None:
    framer = LineFramer(max_line=100)
    out: list[bytes | Overflow] = []
    for _ in range(1000):  # 64 kB without a newline
        out += framer.feed(b"y" * 64)
        assert framer.pending() <= 100
    assert out == []
    out = framer.feed(b"tail\nnext\n")
    assert len(out) == 2
    assert isinstance(out[0], Overflow) and out[0].size == 64_000 + 4
    assert out[1] == b"next"
    # and the framer is back to normal
    assert framer.feed(b"a") == [] and framer.pending() == 1
    assert framer.feed(b"b\n") == [b"ab"]


def test_overflow_is_reported_once_per_line() -> None:
    framer = LineFramer(max_line=4)
    out = feed_all(framer, [b"abcdef", b"ghij", b"kl\nok\n", b"toolong\n"])
    assert out == [Overflow(12), b"ok", Overflow(7)]


def test_partial_buffer_that_grows_past_the_limit_switches_to_discarding() -> None:
    framer = LineFramer(max_line=10)
    assert framer.feed(b"12345") == []
    assert framer.feed(b"678901") == []  # 11 bytes now: over the limit
    assert framer.pending() == 0
    assert framer.feed(b"\nfine\n") == [Overflow(11), b"fine"]


def test_default_limit_is_16_mib() -> None:
    assert DEFAULT_MAX_LINE == 16 * 1024 * 1024
    assert LineFramer().max_line == DEFAULT_MAX_LINE


def test_frame_appends_exactly_one_newline() -> None:
    assert frame(b'{"a":1}') == b'{"a":1}\n'
