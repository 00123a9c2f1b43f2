"""The host-page benchmark's harness still runs (issue #35): a short conversation with
two App views, made through the real host, restored in real Chromium.  Nothing here
asserts a time: only that every kept message and both views came back on each load."""

from __future__ import annotations

import pytest
from bench import host_page


def test_a_reload_restores_the_messages_and_both_views() -> None:
    reason = host_page.why_not()
    if reason is not None:
        pytest.skip(reason)
    results = host_page.measure(messages=8, rounds=2, progress=lambda _: None)
    assert results["kept"] == {"user": 4, "assistant": 6, "views": 2, "events": 16}
    assert len(results["reloads"]) == 2
    for timing in (results["first_open"], *results["reloads"]):
        assert timing["restored"] > 0 and timing["load"] > 0, timing
    lines = host_page.table(results).splitlines()
    assert "10 messages with 2 App views" in lines[0] and len(lines) == 4
