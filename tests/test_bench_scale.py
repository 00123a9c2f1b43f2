"""The scale benchmark's harness still runs (issue #23): tiny points of the listen-stream,
gateway and reaping axes against real processes, and the charts drawn from their JSON.
Nothing here asserts a time; the harness's own checks (every stream heard the change,
every upstream's tools were listed, every expired record was reaped) must hold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bench import charts, scale_gateway, scale_state, scale_streams


def test_listen_streams_every_kind_hears_the_change() -> None:
    kinds = (
        ("modern", "legacy", "replicas") if shutil.which("redis-server") else ("modern", "legacy")
    )
    results = scale_streams.measure((5,), kinds, progress=lambda _: None)
    for kind in kinds:
        point = results[kind][5]
        assert point["streams"] == 5
        assert point["rss_kb"] > 0 and point["fanout_ms"] > 0  # the change reached all 5
    sessions = scale_streams.measure((5,), ("sessions",), progress=lambda _: None)
    assert sessions["sessions"][5]["sessions"] == 5


def test_gateway_lists_every_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale_gateway, "WALKS_CACHED", 2)
    monkeypatch.setattr(scale_gateway, "WALKS_COLD", 2)
    results = scale_gateway.measure((1, 3), progress=lambda _: None)
    assert results["cached"][3]["tools"] == 3 * scale_gateway.TOOLS
    assert results["cold"][1]["tools"] == scale_gateway.TOOLS
    assert "rss_per_upstream_kb" in results


def test_reaping_axis_reaps_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale_state, "EXPIRED", 2_000)
    monkeypatch.setattr(scale_state, "SESSIONS", 200)
    results = scale_state.measure(progress=lambda _: None)  # asserts the counts itself
    for backend in ("sqlite", "memory"):
        assert results["reaper"][backend]["batches"] == 2_000 // 500 + 1
    assert results["sessions"]["sessions"] == 200


def test_charts_are_drawn_from_the_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib", reason="charts need the bench extra")
    monkeypatch.setattr(charts, "CHARTS", tmp_path)
    stored = Path(charts.__file__).parent / "charts" / "scale-results.json"
    drawn = charts.draw(json.loads(stored.read_text()))
    assert {p.name for p in drawn} >= {
        "catalog-register.png",
        "streams-rss.png",
        "streams-fanout.png",
        "gateway-list.png",
    }
    for path in drawn:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
