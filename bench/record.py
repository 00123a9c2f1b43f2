"""Recording a run and printing it: one :class:`Row` per measure, the ratio of mcpkit's
figure to each other contender's, and the table ``python -m bench`` prints."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from .contenders import ALL, OURS, Contender, Settings


@dataclass
class Row:
    """One measure's figures: contender name -> value (a number, or why there is none), in
    ``unit``; ``higher`` says which way is better (None: neither, no ratio shown)."""

    measure: str
    unit: str
    higher: bool | None
    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, float] = field(default_factory=dict)


class Run:
    """What one ``python -m bench`` run recorded: its rows by measure, in order, and notes."""

    def __init__(self, settings: Settings, contenders: dict[str, Contender], workdir: str) -> None:
        self.settings = settings
        self.contenders = contenders
        self.workdir = workdir
        self.rows: dict[str, Row] = {}
        self.notes: list[str] = []
        self.t0 = time.monotonic()
        #: measure -> variant -> median (bench/variants.py), when that section ran.
        self.variants: dict[str, dict[str, float]] = {}
        #: measure -> tool shape -> median (bench/shapes.py), when that section ran.
        self.shapes: dict[str, dict[str, float]] = {}

    def live(self) -> list[str]:
        return [n for n, c in self.contenders.items() if c.available]

    def record(
        self,
        measure: str,
        name: str,
        value: Any,
        unit: str,
        higher: bool | None = None,
        errors: float = 0,
    ) -> None:
        row = self.rows.setdefault(measure, Row(measure, unit, higher))
        row.values[name] = value
        if errors:
            row.errors[name] = errors

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"  note: {text}", file=sys.stderr, flush=True)

    def progress(self, what: str) -> None:
        print(f"  [{time.monotonic() - self.t0:6.1f}s] {what}", file=sys.stderr, flush=True)


def ratio(row: Row, other: str) -> float | None:
    ours, theirs = row.values.get(OURS), row.values.get(other)
    if not isinstance(ours, (int, float)) or not isinstance(theirs, (int, float)) or not theirs:
        return None
    return float(ours) / float(theirs)


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def table(run: Run) -> str:
    names = list(ALL)
    header = ["measure", "unit", "better", *names, *(f"{OURS}/{n}" for n in names[1:])]
    lines = []
    for row in run.rows.values():
        better = {True: "higher", False: "lower", None: ""}[row.higher]
        cells = []
        for n in names:
            c = run.contenders[n]
            value = row.values.get(n)
            if value is None and not c.available:
                cells.append("skipped")
            else:
                text = fmt(value)
                if row.errors.get(n):
                    text += f" ({row.errors[n]:.0f} err)"
                cells.append(text)
        ratios = [fmt_ratio(ratio(row, n)) if row.higher is not None else "" for n in names[1:]]
        lines.append([row.measure, row.unit, better, *cells, *ratios])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]

    def render(cols: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i < 3 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cols, widths, strict=False))
        )

    out = [render(header), render(["-" * w for w in widths])]
    out.extend(render(line) for line in lines)
    return "\n".join(out)
