"""The stdio measures: cold start, the raw driver and each framework's own client.

* **Cold start**: spawn the server, time until its answer to ``initialize`` arrives.
* **Raw driver** (``bench/peers/stdio_driver.py``): one small process pinned to the client
  core, blocking ``os.write``/``os.read`` on the server's pipes, no asyncio.  The same
  driver for every contender's server: the cost of the server alone.
* **Own client** (``bench/peers/client_driver.py``): each framework's own client against its
  own server, each in its own venv: what an application gets end to end (stricter than
  the issue's baseline, which came from a plain subprocess client like the raw driver).

Both run twice: client and server on different cores (the bench's default placement),
then on one core (two context switches per round trip instead of two cross-core wake-ups,
which this VM makes slow: the CPU both sides spend per call).

Every round runs each contender once, a fresh server (and driver) each time, alternating.

* **The stdio floor** (:func:`bench_stdio_floor`): sequential round trips through the raw
  driver, mcpkit serving its echo ``inline=True`` (no worker thread: the transport and the
  request route alone) against the bare echo (``bench/peers/floor_stdio.py``), alternated
  for :func:`floor_rounds` rounds, each side's median and their ratio.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from .contenders import (
    FASTMCP,
    FLOOR,
    LEGACY_INITIALIZE,
    OURS,
    PEERS_DIR,
    SDK,
    Proc,
    Settings,
    _pin,
)
from .record import Run
from .targets import (
    SDK_AS_INSTALLED,
    STDIO_FLOOR,
    STDIO_FLOOR_ONE_CORE,
    as_installed_env,
    measure_as_installed,
    record_as_installed,
)

SEQ = "stdio tools/call sequential (legacy session)"
OWN = "stdio tools/call sequential, each framework's own client"
SEQ_ONE_CORE = "stdio tools/call sequential, one core (legacy session)"
OWN_ONE_CORE = "stdio tools/call sequential, one core, each framework's own client"


def _initialize_time(cmd: list[str], cpu: int | None, cwd: str) -> float:
    """Seconds from spawning the server to its answer to ``initialize``."""
    start = time.perf_counter()
    proc = Proc(
        cmd, cpu, cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.popen.stdin is not None and proc.popen.stdout is not None
    try:
        init = LEGACY_INITIALIZE
        os.write(proc.popen.stdin.fileno(), json.dumps(init).encode() + b"\n")
        buffer = b""
        while True:
            while b"\n" not in buffer:
                chunk = os.read(proc.popen.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise RuntimeError(f"server closed stdout: {' '.join(cmd)}")
                buffer += chunk
            line, buffer = buffer.split(b"\n", 1)
            msg = json.loads(line)
            if msg.get("id") == 1:
                return time.perf_counter() - start
    finally:
        with contextlib.suppress(OSError):
            proc.popen.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=5)
        proc.stop()


def _run_json(
    cmd: list[str], cpu: int | None, what: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        cwd=str(PEERS_DIR),
        preexec_fn=_pin(cpu),
        timeout=900,
        env=env,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{what} failed: {done.stdout[-400:]} {done.stderr[-1500:]}")
    return dict(json.loads(lines[-1]))


def raw_driver_cmd(
    python: str, server: list[str], calls: int, window: int, cpu: int | None
) -> list[str]:
    driver = str(PEERS_DIR / "stdio_driver.py")
    return [
        python,
        driver,
        str(calls),
        str(window),
        "-" if cpu is None else str(cpu),
        "--",
        *server,
    ]


def own_client_cmd(
    name: str, python: str, server: list[str], calls: int, cpu: int | None
) -> list[str]:
    pin = ["taskset", "-c", str(cpu)] if cpu is not None and shutil.which("taskset") else []
    driver = str(PEERS_DIR / "client_driver.py")
    return [python, driver, name, str(calls), "--", *pin, *server]


def bench_stdio(ctx: Run) -> None:
    s = ctx.settings
    names = ctx.live()
    colds: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(s.cold_starts):
        for name in names:
            cmd = ctx.contenders[name].stdio_cmd()
            colds[name].append(_initialize_time(cmd, s.server_cpu, ctx.workdir) * 1000)
    for name in names:
        ctx.record(
            "cold start to first response (stdio initialize)",
            name,
            statistics.median(colds[name]),
            "ms",
            higher=False,
        )
    ctx.progress("stdio cold start")

    raw, own = _round_trips(ctx, names, s.client_cpu, s.server_cpu)
    installed = raw.pop(SDK_AS_INSTALLED, None)
    for name, runs in raw.items():
        ctx.record(SEQ, name, _median([r["seq"] for r in runs], "rps"), "calls/s", higher=True)
        ctx.record(
            "stdio tools/call sequential p50",
            name,
            _median([r["seq"] for r in runs], "p50_ms"),
            "ms",
            higher=False,
        )
        ctx.record(
            "stdio tools/call sequential p99",
            name,
            _median([r["seq"] for r in runs], "p99_ms"),
            "ms",
            higher=False,
        )
        pipe = statistics.median(r["pipe"] for r in runs)
        ctx.record(
            f"stdio tools/call pipelined (window {s.stdio_window})",
            name,
            pipe,
            "calls/s",
            higher=True,
        )
        modern: Any = "n/a (refused)"
        if all(r["modern"] is not None for r in runs):
            modern = _median([r["modern"] for r in runs], "rps")
        ctx.record(
            "stdio tools/call sequential (2026-07-28 _meta)", name, modern, "calls/s", higher=True
        )
    _record_installed(ctx, SEQ, "stdio tools/call sequential p50", installed)
    ctx.progress("stdio round trips (raw driver)")
    _record_own(ctx, OWN, raw, own)
    ctx.progress("stdio round trips (own clients)")
    bench_stdio_floor(ctx)
    if s.server_cpu is None:
        return
    # Client and server on the same core: every hand-off is a context switch on one CPU
    # instead of a wake-up of another (which this VM makes slow), so the round trip is
    # the CPU both sides spend on it.
    raw, own = _round_trips(ctx, names, s.server_cpu, s.server_cpu)
    installed = raw.pop(SDK_AS_INSTALLED, None)
    for name, runs in raw.items():
        seq = [r["seq"] for r in runs]
        ctx.record(SEQ_ONE_CORE, name, _median(seq, "rps"), "calls/s", higher=True)
        ctx.record(f"{SEQ_ONE_CORE} p50", name, _median(seq, "p50_ms"), "ms", higher=False)
    _record_installed(ctx, SEQ_ONE_CORE, f"{SEQ_ONE_CORE} p50", installed)
    _record_own(ctx, OWN_ONE_CORE, raw, own)
    ctx.progress("stdio round trips on one core")


def _round_trips(
    ctx: Run, names: list[str], driver_cpu: int | None, server_cpu: int | None
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """``rounds`` alternating runs of the raw driver and of each framework's own client
    (and of the raw driver against the SDK as installed, under :data:`SDK_AS_INSTALLED`,
    when :func:`measure_as_installed`)."""
    s = ctx.settings
    keys = list(names)
    if measure_as_installed(ctx):
        keys.insert(keys.index(SDK) + 1, SDK_AS_INSTALLED)
    raw: dict[str, list[dict[str, Any]]] = {n: [] for n in keys}
    own: dict[str, list[dict[str, Any]]] = {n: [] for n in names if n in (OURS, SDK, FASTMCP)}
    for _ in range(s.rounds):
        for name in keys:
            installed = name == SDK_AS_INSTALLED
            c = ctx.contenders[SDK if installed else name]
            # The same driver, on the bench's interpreter, for every contender's server.
            cmd = raw_driver_cmd(
                sys.executable, c.stdio_cmd(), s.stdio_calls, s.stdio_window, server_cpu
            )
            env = as_installed_env() if installed else None
            raw[name].append(_run_json(cmd, driver_cpu, f"stdio driver for {name}", env))
            if name in own:
                cmd = own_client_cmd(name, c.python, c.stdio_cmd(), s.client_calls, server_cpu)
                own[name].append(_run_json(cmd, driver_cpu, f"{name}'s own client"))
    return raw, own


def _record_installed(
    ctx: Run, measure: str, p50_measure: str, runs: list[dict[str, Any]] | None
) -> None:
    """The raw driver's figures against the SDK as installed, beside ``measure``'s."""
    if runs:
        seq = [r["seq"] for r in runs]
        record_as_installed(ctx, measure, _median(seq, "rps"))
        record_as_installed(ctx, p50_measure, _median(seq, "p50_ms"))


def _record_own(
    ctx: Run,
    what: str,
    raw: dict[str, list[dict[str, Any]]],
    own: dict[str, list[dict[str, Any]]],
) -> None:
    # The floor has no client: its column is the raw driver against the bare echo, the
    # least any client + server pair can take over these pipes.
    runs_by_name = dict(own)
    if FLOOR in raw:
        runs_by_name[FLOOR] = [r["seq"] for r in raw[FLOOR]]
    for name, runs in runs_by_name.items():
        ctx.record(what, name, _median(runs, "rps"), "calls/s", higher=True)
        ctx.record(f"{what} p50", name, _median(runs, "p50_ms"), "ms", higher=False)
        ctx.record(f"{what} p99", name, _median(runs, "p99_ms"), "ms", higher=False)


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def floor_rounds(settings: Settings) -> tuple[int, int]:
    """(rounds, calls per run) of the stdio floor: several rounds of at least a thousand
    calls even in ``--quick`` (a median of one short run is noise)."""
    rounds = 3 if settings.quick else max(settings.rounds, 5)
    return rounds, max(settings.stdio_calls, 1000)


def alternate(
    names: tuple[str, ...], rounds: int, measure: Callable[[str], float]
) -> dict[str, list[float]]:
    """``measure(name)`` of each name once per round, the order reversed every other round
    (ABBA: a drift of the machine's load weighs on both sides alike)."""
    samples: dict[str, list[float]] = {name: [] for name in names}
    for n in range(rounds):
        for name in names if n % 2 == 0 else reversed(names):
            samples[name].append(measure(name))
    return samples


def record_floor(ctx: Run, measure: str, samples: dict[str, list[float]]) -> None:
    """Each side's median in ``measure``'s row (the table shows their ratio)."""
    for name, values in samples.items():
        ctx.record(measure, name, statistics.median(values), "calls/s", higher=True)


def bench_stdio_floor(ctx: Run) -> None:
    """Across cores (the bench's placement: every round trip waits for two cross-core
    wake-ups, which hide the CPU each side spends), then with the driver on the server's
    core (a round trip is the CPU both sides spend on it)."""
    s = ctx.settings
    rounds, calls = floor_rounds(s)
    placements = [(STDIO_FLOOR, s.client_cpu)]
    if s.server_cpu is not None:
        placements.append((STDIO_FLOOR_ONE_CORE, s.server_cpu))
    for measure, driver_cpu in placements:
        run_once = functools.partial(_floor_rps, ctx, calls, driver_cpu)
        record_floor(ctx, measure, alternate((OURS, FLOOR), rounds, run_once))
        ctx.progress(measure)


def _floor_rps(ctx: Run, calls: int, driver_cpu: int | None, name: str) -> float:
    """Sequential calls/s of the raw driver on ``driver_cpu`` against ``name``'s server
    (mcpkit's with its echo ``inline=True``)."""
    s = ctx.settings
    cmd = raw_driver_cmd(sys.executable, ctx.contenders[name].stdio_cmd(), calls, 1, s.server_cpu)
    env = None
    if name == OURS:
        env = {k: v for k, v in os.environ.items() if k != "MCPKIT_BENCH_ASYNC_TOOLS"}
        env["MCPKIT_BENCH_ECHO"] = "inline"
    return float(_run_json(cmd, driver_cpu, f"stdio floor, {name}", env)["seq"]["rps"])
