"""PNG charts of the scale curves (issue #23), drawn with matplotlib (the ``bench`` extra).

    python -m bench.charts bench-scale.json          # -> bench/charts/*.png

Reads the JSON ``python -m bench.scale --json`` writes and draws one PNG per measure, its
curves against the axis that grows (log scale where the points span decades), with the
issue's target as a dashed line where it has one.  bench/RESULTS.md links the files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CHARTS = Path(__file__).resolve().parent / "charts"


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("charts need matplotlib: pip install 'mcpkit[bench]'") from None
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _xy(points: dict[str, Any], key: str, scale: float = 1.0) -> tuple[list[int], list[float]]:
    xs = sorted(points, key=int)
    return [int(x) for x in xs], [points[x][key] * scale for x in xs]


def _chart(
    plt: Any,
    name: str,
    title: str,
    xlabel: str,
    ylabel: str,
    series: list[tuple[str, list[int], list[float]]],
    *,
    target: float | None = None,
    target_label: str = "target",
    logx: bool = True,
    logy: bool = False,
) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for label, xs, ys in series:
        ax.plot(xs, ys, marker="o", label=label)
    if target is not None:
        ax.axhline(target, linestyle="--", color="grey", label=target_label)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    CHARTS.mkdir(exist_ok=True)
    path = CHARTS / f"{name}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def draw(results: dict[str, Any]) -> list[Path]:
    plt = _pyplot()
    out: list[Path] = []
    catalog = results.get("catalog") or {}
    if catalog:
        out.append(
            _chart(
                plt,
                "catalog-register",
                "Registering tools",
                "tools",
                "seconds",
                [("register all", *_xy(catalog, "register_s"))],
                target=2.0,
                target_label="target at 10,000: 2 s",
                logy=True,
            )
        )
        out.append(
            _chart(
                plt,
                "catalog-call",
                "tools/call against catalog size",
                "tools",
                "µs (median)",
                [
                    ("tools/call", *_xy(catalog, "call_median_us")),
                    ("tools/list page, warm", *_xy(catalog, "list_warm_page_median_us")),
                ],
            )
        )
    tasks = results.get("tasks") or {}
    if tasks:
        out.append(
            _chart(
                plt,
                "tasks-get",
                "tasks/get against task records",
                "records",
                "µs (median)",
                [(backend, *_xy(points, "get_median_us")) for backend, points in tasks.items()],
            )
        )
    streams = {k: v for k, v in (results.get("streams") or {}).items() if k != "notes"}
    if streams:
        out.append(
            _chart(
                plt,
                "streams-rss",
                "RSS per idle stream",
                "streams",
                "KB",
                [(kind, *_xy(points, "rss_per_stream_kb")) for kind, points in streams.items()],
                target=20.0,
                target_label="target: 20 KB",
            )
        )
        out.append(
            _chart(
                plt,
                "streams-fanout",
                "tools/list_changed reaching every stream",
                "streams",
                "ms",
                [(kind, *_xy(points, "fanout_ms")) for kind, points in streams.items()],
                target=1000.0,
                target_label="target at 10,000: 1 s",
                logy=True,
            )
        )
    gateway = results.get("gateway") or {}
    if gateway.get("cached"):
        out.append(
            _chart(
                plt,
                "gateway-list",
                "Merged tools/list through the gateway",
                "upstreams",
                "ms (median walk)",
                [
                    ("cached", *_xy(gateway["cached"], "list_ms")),
                    ("cold", *_xy(gateway["cold"], "list_ms")),
                ],
                logy=True,
            )
        )
        out.append(
            _chart(
                plt,
                "gateway-rss",
                "Gateway RSS",
                "upstreams",
                "MiB",
                [("RSS", *_xy(gateway["cached"], "rss_kb", 1 / 1024))],
            )
        )
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for path in draw(json.loads(Path(argv[0]).read_text())):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
