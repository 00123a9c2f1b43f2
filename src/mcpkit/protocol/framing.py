"""stdio framing: one JSON-RPC message per line, UTF-8, no embedded newlines.

:class:`LineFramer` turns arbitrary chunks into complete lines without ever holding more
than ``max_line`` bytes of a partial line (a peer that never sends a newline cannot make us
buffer without bound: the overlong line is dropped and reported once).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_LINE = 16 * 1024 * 1024


@dataclass(slots=True)
class Overflow:
    """An input line longer than the limit was discarded."""

    size: int


class LineFramer:
    __slots__ = ("_buffer", "_discarded", "_discarding", "max_line")

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        self._buffer = bytearray()
        self._discarding = False
        self._discarded = 0
        self.max_line = max_line

    def feed(self, chunk: bytes) -> list[bytes | Overflow]:
        """Add bytes; return the complete lines (without ``\\n``/``\\r\\n``), in order.

        Blank lines are skipped.  Lines over the limit come back as :class:`Overflow`.
        """
        if (  # the common case: exactly one whole line, nothing held from before
            not self._buffer
            and not self._discarding
            and chunk.find(b"\n") == len(chunk) - 1
            and len(chunk) <= self.max_line
        ):
            line = chunk[:-2] if chunk.endswith(b"\r\n") else chunk[:-1]
            return [line] if line and not line.isspace() else []
        out: list[bytes | Overflow] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            piece = chunk[start:end]
            start = end + 1
            if self._discarding:
                out.append(Overflow(self._discarded + len(piece)))
                self._discarding = False
                self._discarded = 0
                continue
            if self._buffer:
                self._buffer += piece
                line = bytes(self._buffer)
                self._buffer.clear()
            else:
                line = piece
            if len(line) > self.max_line:
                out.append(Overflow(len(line)))
                continue
            if line.endswith(b"\r"):
                line = line[:-1]
            if line and not line.isspace():
                out.append(line)
        rest = chunk[start:]
        if rest:
            if self._discarding:
                self._discarded += len(rest)
            elif len(self._buffer) + len(rest) > self.max_line:
                self._discarding = True
                self._discarded = len(self._buffer) + len(rest)
                self._buffer.clear()
            else:
                self._buffer += rest
        return out

    def pending(self) -> int:
        """Bytes of an unfinished line held right now."""
        return len(self._buffer)


def frame(payload: bytes) -> bytes:
    """One outgoing line.  The codec never emits raw newlines, so appending one is enough."""
    return payload + b"\n"
