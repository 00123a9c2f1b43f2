"""The one codec: bytes <-> JSON values.

Every transport calls :func:`decode` exactly once per incoming message and :func:`encode`
exactly once per outgoing message; nobody else parses JSON.  orjson is used because on the
hot path (one decode + one encode per call) it is several times faster than :mod:`json`.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["DecodeError", "decode", "encode", "encode_str"]


class DecodeError(ValueError):
    """The bytes were not valid UTF-8 JSON (becomes JSON-RPC -32700)."""


def decode(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON document; raise :class:`DecodeError` on anything that is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(str(exc)) from None


def encode(value: Any) -> bytes:
    """Serialize to compact UTF-8 JSON with no embedded newlines (safe for stdio framing)."""
    return orjson.dumps(value)


def encode_str(value: Any) -> str:
    """Like :func:`encode` but returns ``str`` (for headers and SSE text)."""
    return orjson.dumps(value).decode()
