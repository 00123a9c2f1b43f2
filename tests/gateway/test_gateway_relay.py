"""An upstream's answer is read once by the fast lane and passed on re-encoded, so it is
read without the repeated-member check requests get (``codec.decode_relayed``); its
errors still quote the body."""

from __future__ import annotations

import pytest

from mcpkit.transports.client_base import HttpStatusError, ProtocolViolationError
from mcpkit.transports.client_http_wire import json_answer
from mcpkit.types.codec import DecodeError, decode, decode_relayed, encode

REPEATED = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false,"isError":true}}'


def test_a_relayed_answer_is_read_once_and_passes_on_without_the_repeat() -> None:
    with pytest.raises(DecodeError):
        decode(REPEATED)  # a request like this is refused (-32600)
    answer = json_answer(REPEATED, 200, "tools/call", "up", relayed=True)
    assert answer is not None
    assert answer["result"]["isError"] is True  # the one reading, which goes on as it is
    assert encode(answer).count(b"isError") == 1
    assert decode_relayed(b'{"a":1}') == {"a": 1}


def test_relayed_errors_still_quote_the_body() -> None:
    with pytest.raises(DecodeError):
        decode_relayed(b"{not json")
    with pytest.raises(ProtocolViolationError, match="invalid JSON: '<html>"):
        json_answer(b"<html>oops</html>", 200, "tools/call", "up", relayed=True)
    with pytest.raises(
        HttpStatusError, match="tools/call: HTTP 502 Bad Gateway from up: bad gateway"
    ):
        json_answer(b"bad gateway", 502, "tools/call", "up", relayed=True)
    with pytest.raises(ProtocolViolationError, match="not a JSON-RPC response"):
        json_answer(b'{"jsonrpc":"2.0"}', 200, "tools/call", "up", relayed=True)
