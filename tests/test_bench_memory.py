"""The stream-memory benchmark's harness still runs (issue #33): a small event, over small
limits, against the real server, client and gateway processes it starts.  Nothing here
asserts a time or a memory figure; each caller must have hit its limit, and the gateway
must answer the next call."""

from __future__ import annotations

import pytest
from bench import stream_memory

MIB = 1024 * 1024


def test_the_client_and_the_gateway_hit_their_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(stream_memory.LIMITS, "client", 1 * MIB)
    monkeypatch.setitem(stream_memory.LIMITS, "gateway", MIB // 4)
    results = stream_memory.measure(4, progress=lambda _: None)
    client, gateway = results["client"], results["gateway"]
    assert client["outcome"].startswith("MessageTooLargeError"), client
    assert f"max_message_bytes ({MIB} bytes)" in client["outcome"]
    assert "too large" in gateway["outcome"] and gateway["next_call"] == "ok", gateway
    for figures in (client, gateway):
        assert figures["peak_kb"] >= figures["before_kb"] > 0
    lines = stream_memory.table(results).splitlines()
    assert lines[0] == "one 4 MiB SSE event" and len(lines) == 4
