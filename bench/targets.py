"""What a run is read against: the targets (the issue's, and stricter ones of ours), each a
:class:`Target` checked into a :class:`TargetCheck`, and the rows that pair mcpkit's figures
with the SDK as ``pip install mcp`` runs it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .contenders import FLOOR, OURS, SDK
from .record import Row, Run, ratio

#: The gateway's CPU per forwarded call over its upstream's (issue #20: at most 1.5).
GATEWAY_CPU = "gateway CPU / upstream's CPU per forwarded tools/call, c=16"

#: mcpkit's echo ``inline=True`` against the bare echo over the same pipes (bench/stdio.py).
STDIO_FLOOR = "stdio floor: sequential round trips, raw driver, mcpkit's echo inline=True"
#: The same with the driver on the server's core: the CPU both sides spend per round trip.
STDIO_FLOOR_ONE_CORE = STDIO_FLOOR.replace("round trips,", "round trips on one core,")

#: The SDK as ``pip install mcp`` runs it (stock uvicorn on asyncio + h11; over stdio its own
#: asyncio loop), measured beside the others in a same-stack run for the cells the issue's
#: targets read (modern JSON ``tools/call``, stdio sequential through the raw driver): the
#: issue's own SDK baseline ("without --fast, what pip install mcp users get"), so that both
#: ratios come from one run.  Its figures go to rows named after the cell's plus
#: :data:`AS_INSTALLED` (see :func:`record_as_installed`).
SDK_AS_INSTALLED = "sdk (as installed)"
AS_INSTALLED = ", against the SDK as `pip install mcp` runs it"
AS_INSTALLED_ENV = "default"  # MCPKIT_BENCH_PEER_STACK for that server (bench/peers/_serve.py)


def measure_as_installed(ctx: Run) -> bool:
    """Whether this run adds the SDK as installed (a same-stack run with the SDK)."""
    same_stack = os.environ.get("MCPKIT_BENCH_PEER_STACK") != AS_INSTALLED_ENV
    return same_stack and SDK in ctx.contenders and ctx.contenders[SDK].available


def as_installed_env() -> dict[str, str]:
    return dict(os.environ, MCPKIT_BENCH_PEER_STACK=AS_INSTALLED_ENV)


def installed_row(measure: str) -> str:
    """The name of ``measure``'s row against the SDK as installed."""
    return measure + AS_INSTALLED


def record_as_installed(ctx: Run, measure: str, value: float, errors: float = 0) -> None:
    """The row :func:`installed_row` names: mcpkit's and the floor's figures of ``measure``
    (recorded before) with ``value``, the SDK as installed, in the SDK column."""
    base = ctx.rows.get(measure)
    if base is None:
        return
    for name in (OURS, FLOOR):
        if name in base.values:
            ctx.record(
                installed_row(measure),
                name,
                base.values[name],
                base.unit,
                base.higher,
                base.errors.get(name, 0),
            )
    ctx.record(installed_row(measure), SDK, value, base.unit, base.higher, errors)


# Targets: each a Target (description, measure, versus, comparison, bound, kind, and whether
# it reads the row against the SDK as installed).  ISSUE: the issue's
# targets against its own baselines: the SDK as `pip install mcp` runs it (the issue's 830
# calls/s came from ../shared/peers without --fast: asyncio + h11; over stdio the SDK's own
# asyncio loop), one raw client for every stdio server (its stdio figures came from the
# peers' stdio_client.py, a plain subprocess client).  STRICTER: the same bars on harder
# terms, reported beside them: the SDK on mcpkit's own stack (uvloop, httptools), or each
# framework's own client in the loop.
ISSUE, STRICTER = "issue", "stricter"


@dataclass(frozen=True)
class Target:
    """A target the run is read against: ``measure``'s mcpkit figure over ``versus``'s
    (a contender's column) must be ``op`` (``<=`` or ``>=``) ``bound``; ``kind`` says whose
    target it is (the issue's, or a stricter one of ours)."""

    text: str
    measure: str
    versus: str
    op: str
    bound: float
    kind: str
    #: Read from ``measure``'s twin row (:func:`installed_row`): the SDK as installed.
    as_installed: bool = False

    def row(self, peer_stack: str = "same") -> str | None:
        """The row this target reads in a run with ``peer_stack`` (None: not read there)."""
        if peer_stack == "default":
            # The SDK column is the SDK as installed: the issue's baseline is the plain
            # row; the same-stack comparison needs a run without --peer-stack default.
            if self.kind == STRICTER and not self.as_installed and self.measure in _TWINNED:
                return None  # the same-stack twin of an issue target: equal to it here
            return self.measure
        return installed_row(self.measure) if self.as_installed else self.measure


TARGETS: tuple[Target, ...] = (
    Target(
        "Lambda cold start, import to first tools/call: <= 1/5 of the SDK's",
        "Lambda cold start: import to first tools/call answered",
        SDK,
        "<=",
        0.2,
        ISSUE,
    ),
    Target(
        "HTTP modern JSON tools/call c=16: >= 10x the SDK's throughput (the SDK as installed)",
        "http modern-json tools/call c=16 throughput",
        SDK,
        ">=",
        10.0,
        ISSUE,
        as_installed=True,
    ),
    Target(
        "HTTP modern JSON tools/call c=16: >= 50% of the bare ASGI floor on the same stack",
        "http modern-json tools/call c=16 throughput",
        FLOOR,
        ">=",
        0.5,
        ISSUE,
    ),
    Target(
        "HTTP modern JSON tools/call c=64: p99 <= 1/10 of the SDK's (the SDK as installed)",
        "http modern-json tools/call c=64 p99",
        SDK,
        "<=",
        0.1,
        ISSUE,
        as_installed=True,
    ),
    Target(
        "stdio: >= 20x the SDK's sequential calls/s (one raw client; the SDK as installed)",
        "stdio tools/call sequential (legacy session)",
        SDK,
        ">=",
        20.0,
        ISSUE,
        as_installed=True,
    ),
    Target(
        "stdio on one core: >= 20x the SDK's sequential calls/s (one raw client; the SDK as "
        "installed)",
        "stdio tools/call sequential, one core (legacy session)",
        SDK,
        ">=",
        20.0,
        ISSUE,
        as_installed=True,
    ),
    Target(
        "stdio floor: sequential round trips of mcpkit's echo inline=True >= 0.6x the bare "
        "echo's (one raw driver, alternated)",
        STDIO_FLOOR,
        FLOOR,
        ">=",
        0.6,
        ISSUE,
    ),
    Target(
        "stdio floor on one core: sequential round trips of mcpkit's echo inline=True >= 0.6x "
        "the bare echo's (one raw driver, alternated)",
        STDIO_FLOOR_ONE_CORE,
        FLOOR,
        ">=",
        0.6,
        ISSUE,
    ),
    Target(
        "in-process dispatch: >= 15x the SDK's",
        "in-process tools/call (no transport)",
        SDK,
        ">=",
        15.0,
        ISSUE,
    ),
    Target(
        "import of the server API <= 1/5 of the SDK's",
        "import of the server API",
        SDK,
        "<=",
        0.2,
        ISSUE,
    ),
    Target(
        "import of the client API <= 1/5 of the SDK's",
        "import of the client API",
        SDK,
        "<=",
        0.2,
        ISSUE,
    ),
    Target(
        "HTTP modern JSON tools/call c=16: >= 10x the SDK on mcpkit's server stack",
        "http modern-json tools/call c=16 throughput",
        SDK,
        ">=",
        10.0,
        STRICTER,
    ),
    Target(
        "HTTP modern JSON tools/call c=64: p99 <= 1/10 of the SDK's on mcpkit's server stack",
        "http modern-json tools/call c=64 p99",
        SDK,
        "<=",
        0.1,
        STRICTER,
    ),
    Target(
        "stdio: >= 20x the SDK's sequential calls/s, one raw client, the SDK on uvloop",
        "stdio tools/call sequential (legacy session)",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
    Target(
        "stdio on one core: >= 20x the SDK's sequential calls/s, one raw client, the SDK on uvloop",
        "stdio tools/call sequential, one core (legacy session)",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
    Target(
        "stdio: >= 20x the SDK's sequential calls/s, each framework's own client",
        "stdio tools/call sequential, each framework's own client",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
    Target(
        "stdio on one core: >= 20x the SDK's sequential calls/s, each framework's own client",
        "stdio tools/call sequential, one core, each framework's own client",
        SDK,
        ">=",
        20.0,
        STRICTER,
    ),
)


def _verdict(row: Row, versus: str, op: str, bound: float) -> tuple[float | None, str]:
    """(ratio, verdict).  "floor-bound": not met, and the bare floor itself does not reach
    the bound in that row, so no implementation could on this machine and placement."""
    value = ratio(row, versus)
    if value is None:
        return None, "n/a"
    if value >= bound if op == ">=" else value <= bound:
        return value, "met"
    floor, theirs = row.values.get(FLOOR), row.values.get(versus)
    if (
        op == ">="
        and isinstance(floor, (int, float))
        and isinstance(theirs, (int, float))
        and theirs
        and floor / theirs < bound
    ):
        return value, "floor-bound"
    return value, "NOT met"


#: Measures that the issue's targets read against the SDK as installed.
_TWINNED = frozenset(t.measure for t in TARGETS if t.as_installed)


@dataclass(frozen=True)
class TargetCheck:
    """One target read against a run: its ratio (None: a row is missing) and the verdict
    (``met``, ``NOT met``, ``floor-bound`` or ``n/a``)."""

    target: str
    kind: str
    ratio: float | None
    bound: str
    verdict: str


def check_targets(run: Run, peer_stack: str = "same") -> list[TargetCheck]:
    out = []
    for target in TARGETS:
        measure = target.row(peer_stack)
        row = run.rows.get(measure) if measure is not None else None
        value, verdict = (
            _verdict(row, target.versus, target.op, target.bound) if row else (None, "n/a")
        )
        out.append(
            TargetCheck(target.text, target.kind, value, f"{target.op} {target.bound}", verdict)
        )
    growth = next((r for m, r in run.rows.items() if m.startswith("RSS growth")), None)
    value = growth.values.get(OURS) if growth else None
    verdict = "n/a"
    if isinstance(value, float):
        verdict = "met" if value <= 1.10 else "NOT met"
    out.append(
        TargetCheck(
            "RSS after the larger call count within 10% of RSS after the smaller",
            ISSUE,
            value,
            "<= 1.1",
            verdict,
        )
    )
    out.extend(shape_checks(run.shapes))
    cpu = run.rows.get(GATEWAY_CPU)
    value = cpu.values.get(OURS) if cpu else None
    out.append(
        TargetCheck(
            "gateway CPU per forwarded tools/call at c=16 <= 1.5x the upstream's",
            ISSUE,
            value,
            "<= 1.5",
            "n/a" if value is None else "met" if value <= 1.5 else "NOT met",
        )
    )
    return out


#: The shapes users write against the same tool ``inline=True`` (bench/shapes.py): measure,
#: shape, the least ratio to ``inline``.
SHAPE_TARGETS = (
    ("http modern-json tools/call c=16 (calls/s)", "def", 0.6),
    ("stdio tools/call sequential, raw driver (calls/s)", "def", 0.6),
    ("http modern-json tools/call c=16 (calls/s)", "async", 0.9),
    ("stdio tools/call sequential, raw driver (calls/s)", "async", 0.9),
)


def shape_checks(shapes: dict[str, dict[str, float]]) -> list[TargetCheck]:
    """A plain ``def`` echo at least 0.6x, an ``async def`` one at least 0.9x the calls/s
    of the same echo ``inline=True``, in one run (this tree's columns)."""
    out = []
    for measure, shape, bound in SHAPE_TARGETS:
        figures = shapes.get(measure, {})
        inline, value = figures.get("inline"), figures.get(shape)
        share = value / inline if inline and value else None
        verdict = "n/a" if share is None else "met" if share >= bound else "NOT met"
        what = measure.split(" (")[0]
        spelled = "a plain `def`" if shape == "def" else "an `async def`"
        text = f"{what}: {spelled} echo >= {bound}x the same echo inline=True"
        out.append(TargetCheck(text, ISSUE, share, f">= {bound}", verdict))
    return out
