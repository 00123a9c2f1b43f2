"""The one codec: bytes <-> JSON values.

Every transport calls :func:`decode` exactly once per incoming message and :func:`encode`
exactly once per outgoing message; nobody else parses JSON.  orjson is used because on the
hot path (one decode + one encode per call) it is several times faster than :mod:`json`.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["DecodeError", "decode", "decode_relayed", "encode", "encode_message", "encode_str"]


class DecodeError(ValueError):
    """The bytes were not valid UTF-8 JSON (becomes JSON-RPC -32700)."""


class DuplicateKeyError(DecodeError):
    """Valid JSON, but an object repeats a member name (becomes -32600): parsers disagree
    on which one wins, so a proxy and a server could see different requests.  The error
    names no id: the id itself could be the repeated member."""


def decode(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON document; raise :class:`DecodeError` on anything that is not JSON.

    Repeated member names are refused.  The check is nearly free for compact input: if
    re-encoding gives back exactly as many bytes, the input was canonical and had no
    duplicates; only other input (pretty-printed, escaped, or with duplicates) pays for a
    second, strict parse.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(str(exc)) from None
    if isinstance(value, (dict, list)):
        try:
            canonical = len(orjson.dumps(value)) == len(data)
        except (TypeError, orjson.JSONEncodeError):
            canonical = False  # e.g. nested deeper than orjson writes
        if not canonical:
            _refuse_duplicates(data)
    return value


def decode_relayed(data: bytes | bytearray | memoryview | str) -> Any:
    """:func:`decode` without the repeated-member check, for a message its reader passes
    on re-encoded (an upstream's answer, as the gateway forwards it).

    The check exists so that two parsers cannot read one message two ways.  A relayed
    message is read once, here, and what goes on is the re-encoding of that reading (a
    repeated member cannot survive it), so there is nothing to refuse; skipping it saves
    the check's re-encode of every forwarded answer."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(str(exc)) from None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        name = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise DuplicateKeyError(f"duplicate member name {name!r}")
    return result


def _refuse_duplicates(data: bytes | bytearray | memoryview | str) -> None:
    import json

    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "surrogatepass")
    try:
        json.loads(text, object_pairs_hook=_unique)
    except DuplicateKeyError:
        raise
    except (ValueError, RecursionError):
        return  # orjson accepted it; the stdlib's limits differ: not our question here


def encode(value: object) -> bytes:
    """Serialize to compact UTF-8 JSON with no embedded newlines (safe for stdio framing)."""
    return orjson.dumps(value)


def encode_str(value: object) -> str:
    """Like :func:`encode` but returns ``str`` (for headers and SSE text)."""
    return orjson.dumps(value).decode()


def encode_message(message: dict[str, Any]) -> bytes:
    """Encode an outgoing JSON-RPC message, never failing for a response.

    Handler output can be unencodable (nested deeper than orjson allows, a lone surrogate
    from ``os.fsdecode``, an object JSON has no form for).  A response that cannot be
    encoded becomes the same response with a -32603 error, so the peer is answered and the
    connection survives; a notification raises :class:`ValueError` (the caller drops it).
    """
    try:
        return orjson.dumps(message)
    except (TypeError, orjson.JSONEncodeError) as exc:
        if "id" not in message or "method" in message:
            raise ValueError(f"message could not be encoded as JSON: {exc}") from None
        reply = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {
                "code": -32603,
                "message": f"Internal error: the result could not be encoded as JSON ({exc})",
            },
        }
        return orjson.dumps(reply)
