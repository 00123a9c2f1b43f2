"""The measures run against every contender (or against mcpkit alone): HTTP throughput and
latency under wrk, RSS under load, in-process dispatch, import time and the gateway's cost.
stdio has its own module (bench/stdio.py), so do cold start, variants and scale."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .contenders import OURS, PEERS_DIR, SDK, Contender, Proc, Settings, _pin, free_port
from .load import WrkRun, legacy_session, probe_content_type, run_wrk, serve_ours_http, wait_http
from .record import Run
from .targets import (
    GATEWAY_CPU,
    SDK_AS_INSTALLED,
    as_installed_env,
    measure_as_installed,
    record_as_installed,
)

HTTP_MODES = ("modern-json", "modern-sse", "legacy")


def http_cells(mode: str, settings: Settings) -> list[tuple[str, int]]:
    # SSE answers come from progress_echo, a tools/call; --quick keeps to tools/call.
    if mode == "modern-sse" or settings.quick:
        methods: tuple[str, ...] = ("tools/call",)
    else:
        methods = ("tools/call", "tools/list")
    return [(m, c) for m in methods for c in settings.concurrency]


@dataclass(frozen=True)
class HttpServer:
    """A server to start for one HTTP mode: its column (a contender's name, or
    :data:`SDK_AS_INSTALLED`), the contender that serves it and its environment."""

    key: str
    contender: Contender
    env: dict[str, str] | None = None


@dataclass
class Serving:
    """A started HTTP server: its process, its port and its legacy session (``-``: none)."""

    proc: Proc
    port: int
    session: str = "-"


def _http_servers(ctx: Run, mode: str) -> list[HttpServer]:
    """Every server to start for ``mode``."""
    out = [HttpServer(name, ctx.contenders[name]) for name in ctx.live()]
    if mode == "modern-json" and measure_as_installed(ctx):
        out.append(HttpServer(SDK_AS_INSTALLED, ctx.contenders[SDK], as_installed_env()))
    return out


def bench_http(ctx: Run) -> None:
    if shutil.which("wrk") is None:
        ctx.note("http: skipped (wrk is not installed: apt-get install wrk)")
        return
    s = ctx.settings
    for mode in HTTP_MODES:
        procs: dict[str, Serving] = {}
        try:
            for server in _http_servers(ctx, mode):
                port = free_port()
                proc = Proc(
                    server.contender.http_cmd(mode, port),
                    s.server_cpu,
                    ctx.workdir,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=server.env,
                )
                procs[server.key] = Serving(proc, port)
            for name, serving in procs.items():
                wait_http(serving.port, serving.proc)
                if mode == "legacy":
                    serving.session = legacy_session(serving.port)
                kind = probe_content_type(serving.port, mode, serving.session)
                if name != SDK_AS_INSTALLED:
                    ctx.record(f"http {mode} answer", name, kind, "type")
            tool = "progress_echo" if mode == "modern-sse" else "echo"
            era = "legacy" if mode == "legacy" else "modern"
            for serving in procs.values():  # warm-up
                if s.warmup:
                    warm = ["tools/call", era, tool, serving.session]
                    run_wrk(serving.port, 16, s.warmup, warm, s.client_cpu)
            for method, conc in http_cells(mode, s):
                cell = {  # the SDK as installed: tools/call only (the targets' measure)
                    n: v
                    for n, v in procs.items()
                    if method == "tools/call" or n != SDK_AS_INSTALLED
                }
                samples: dict[str, list[WrkRun]] = {n: [] for n in cell}
                for _ in range(s.rounds):
                    for name, serving in cell.items():
                        wrk_args = [method, era, tool, serving.session]
                        got = run_wrk(serving.port, conc, s.duration, wrk_args, s.client_cpu)
                        samples[name].append(got)
                label = f"http {mode} {method} c={conc}"
                mine = {n: runs for n, runs in samples.items() if n != SDK_AS_INSTALLED}
                for name, runs in mine.items():
                    errors = sum(r.errors for r in runs)
                    rps = statistics.median(r.rps for r in runs)
                    p50 = statistics.median(r.p50_ms for r in runs)
                    p99 = statistics.median(r.p99_ms for r in runs)
                    ctx.record(
                        f"{label} throughput", name, rps, "calls/s", higher=True, errors=errors
                    )
                    ctx.record(f"{label} p50", name, p50, "ms", higher=False)
                    ctx.record(f"{label} p99", name, p99, "ms", higher=False)
                runs = samples.get(SDK_AS_INSTALLED, [])
                if runs:
                    errors = sum(r.errors for r in runs)
                    for what, figures in (
                        ("throughput", [r.rps for r in runs]),
                        ("p50", [r.p50_ms for r in runs]),
                        ("p99", [r.p99_ms for r in runs]),
                    ):
                        value = statistics.median(figures)
                        record_as_installed(ctx, f"{label} {what}", value, errors)
                ctx.progress(label)
            for name, serving in procs.items():
                if name == SDK_AS_INSTALLED:
                    continue
                rss, hwm = serving.proc.rss_kb()
                steady = f"http {mode} RSS steady (after load)"
                ctx.record(steady, name, rss / 1024, "MiB", higher=False)
                ctx.record(f"http {mode} RSS peak", name, hwm / 1024, "MiB", higher=False)
        finally:
            for serving in procs.values():
                serving.proc.stop()


def bench_rss(ctx: Run) -> None:
    """RSS of mcpkit's HTTP server after N1 and after N2 modern tools/call (no growth)."""
    if shutil.which("wrk") is None:
        ctx.note("rss: skipped (wrk is not installed)")
        return
    s = ctx.settings
    first, second = s.rss_calls
    proc, port = serve_ours_http(ctx)
    try:
        wait_http(port, proc)
        wrk_args = ["tools/call", "modern", "echo", "-"]
        done = 0
        figures = {}
        for target in (first, second):
            while done < target:  # 1-second runs until at least `target` calls were served
                got = run_wrk(port, 16, 1, wrk_args, s.client_cpu)
                done += int(got.requests)
            figures[target] = proc.rss_kb()[0] / 1024
        ctx.record(f"RSS after {first:,} calls", OURS, figures[first], "MiB", higher=False)
        ctx.record(f"RSS after {second:,} calls", OURS, figures[second], "MiB", higher=False)
        growth = figures[second] / figures[first]
        ctx.record(f"RSS growth {first:,} -> {second:,} calls", OURS, growth, "ratio", higher=False)
        ctx.progress("rss")
    finally:
        proc.stop()


# ---------------------------------------------------------------------------- in-process


@dataclass(frozen=True)
class InprocRun:
    """What one in-process run printed (its last JSON line: bench/peers/*_server.py inproc)."""

    calls_per_s: float
    p50_us: float

    @classmethod
    def parse(cls, line: str) -> InprocRun:
        figures = json.loads(line)
        return cls(float(figures["calls_per_s"]), float(figures["p50_us"]))


def bench_inproc(ctx: Run) -> None:
    s = ctx.settings
    samples: dict[str, list[InprocRun]] = {}
    for _ in range(s.rounds):
        for name in ctx.live():
            cmd = ctx.contenders[name].inproc_cmd(s.inproc_calls)
            if cmd is None:
                continue
            done = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                cwd=str(PEERS_DIR),
                preexec_fn=_pin(s.server_cpu),
                timeout=600,
            )
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode != 0 or not lines:
                raise RuntimeError(f"in-process run failed for {name}: {done.stderr[-800:]}")
            samples.setdefault(name, []).append(InprocRun.parse(lines[-1]))
    for name, runs in samples.items():
        rps = statistics.median(r.calls_per_s for r in runs)
        p50 = statistics.median(r.p50_us for r in runs)
        ctx.record("in-process tools/call (no transport)", name, rps, "calls/s", higher=True)
        ctx.record("in-process tools/call p50", name, p50, "µs", higher=False)
    ctx.progress("in-process")


# ---------------------------------------------------------------------------- import time


def import_seconds(python: str, stmt: str, cpu: int | None) -> float | None:
    code = f"import time\nt = time.perf_counter()\n{stmt}\nprint(time.perf_counter() - t)"
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, preexec_fn=_pin(cpu), timeout=120
    )
    if done.returncode != 0:
        return None
    return float(done.stdout.strip().splitlines()[-1])


def bench_import(ctx: Run) -> None:
    s = ctx.settings
    for api in ("server", "client"):
        samples: dict[str, list[float | None]] = {}
        for _ in range(s.import_runs):
            for name in ctx.live():
                stmt = ctx.contenders[name].import_stmt(api)
                if stmt is None:
                    continue
                got = import_seconds(ctx.contenders[name].python, stmt, s.server_cpu)
                samples.setdefault(name, []).append(got)
        for name, runs in samples.items():
            label = f"import of the {api} API"
            if any(r is None for r in runs):
                ctx.record(label, name, "not available (import failed)", "ms", higher=False)
            else:
                ms = statistics.median(r for r in runs if r is not None) * 1000
                ctx.record(label, name, ms, "ms", higher=False)
    ctx.progress("import time")


# ---------------------------------------------------------------------------- gateway


def bench_gateway(ctx: Run) -> None:
    """The gateway's added latency: modern tools/call straight to mcpkit's HTTP server,
    and through ``mcpkit gateway`` in front of that same server (one upstream, no prefix,
    no auth, default policy), alternately, at c=1 and c=16.

    Reports "not available" while ``src/mcpkit/gateway`` does not exist.
    """
    label = "gateway"
    if importlib.util.find_spec("mcpkit.gateway") is None or shutil.which("wrk") is None:
        why = "not available (no mcpkit.gateway yet)" if shutil.which("wrk") else "no wrk"
        ctx.record(f"{label} added p50 latency, c=1", OURS, why, "ms", higher=False)
        return
    s = ctx.settings
    upstream_port = free_port()
    procs: list[Proc] = []
    try:
        upstream = Proc(
            ctx.contenders[OURS].http_cmd("modern-json", upstream_port),
            s.server_cpu,
            ctx.workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # The gateway's cost against its upstream's, each call the least it can be.
            env=dict(os.environ, MCPKIT_BENCH_ECHO="inline"),
        )
        procs.append(upstream)
        wait_http(upstream_port, upstream)
        gateway, gateway_port = _start_gateway(ctx, "gateway", upstream_port, "", procs)
        wrk_args = ["tools/call", "modern", "echo", "-"]
        if s.warmup:
            for port in (upstream_port, gateway_port):
                run_wrk(port, 16, s.warmup, wrk_args, s.client_cpu)
        for conc in [c for c in s.concurrency if c in (1, 16)]:
            samples: dict[int, list[WrkRun]] = {upstream_port: [], gateway_port: []}
            cpu = [0.0, 0.0, 0.0]  # gateway s, upstream s, calls: over the runs via the gateway
            for _ in range(s.rounds):
                for port in samples:
                    before = (gateway.cpu_s(), upstream.cpu_s())
                    samples[port].append(run_wrk(port, conc, s.duration, wrk_args, s.client_cpu))
                    if port == gateway_port:
                        cpu[0] += gateway.cpu_s() - before[0]
                        cpu[1] += upstream.cpu_s() - before[1]
                        cpu[2] += samples[port][-1].requests
            if conc == 16 and cpu[2]:
                _record_gateway_cpu(ctx, label, conc, cpu[0], cpu[1], cpu[2])
            direct = statistics.median(r.p50_ms for r in samples[upstream_port])
            via = statistics.median(r.p50_ms for r in samples[gateway_port])
            errors = sum(r.errors for r in samples[gateway_port])
            ctx.record(
                f"{label} added p50 latency, c={conc}", OURS, via - direct, "ms", errors=errors
            )
            ctx.record(f"{label} direct p50, c={conc}", OURS, direct, "ms")
            rps_direct = statistics.median(r.rps for r in samples[upstream_port])
            rps_via = statistics.median(r.rps for r in samples[gateway_port])
            ctx.record(
                f"{label} throughput via gateway / direct, c={conc}",
                OURS,
                rps_via / rps_direct,
                "ratio",
            )
        _bench_legacy_upstream(ctx, upstream, upstream_port, procs)
        ctx.progress("gateway")
    finally:
        for proc in reversed(procs):
            proc.stop()


def _bench_legacy_upstream(ctx: Run, upstream: Proc, upstream_port: int, procs: list[Proc]) -> None:
    """The same modern calls through a gateway that speaks 2025-11-25 to the same upstream
    (``era = "legacy"``: one session, forwarded through the upstream's Client rather than
    the fast lane), at c=16: its CPU per forwarded call against the upstream's, and its
    throughput."""
    s = ctx.settings
    label = "gateway, legacy upstream:"
    gateway, port = _start_gateway(ctx, "gateway-legacy", upstream_port, 'era = "legacy"\n', procs)
    wrk_args = ["tools/call", "modern", "echo", "-"]
    if s.warmup:
        run_wrk(port, 16, s.warmup, wrk_args, s.client_cpu)
    runs: list[WrkRun] = []
    gateway_s = upstream_s = 0.0
    for _ in range(s.rounds):
        before = (gateway.cpu_s(), upstream.cpu_s())
        runs.append(run_wrk(port, 16, s.duration, wrk_args, s.client_cpu))
        gateway_s += gateway.cpu_s() - before[0]
        upstream_s += upstream.cpu_s() - before[1]
    calls = sum(r.requests for r in runs)
    if calls:
        ratio = f"{label} gateway CPU / upstream's CPU per call, c=16"
        _record_gateway_cpu(ctx, label, 16, gateway_s, upstream_s, calls, ratio)
    errors = sum(r.errors for r in runs)
    ctx.record(
        f"{label} calls/s, c=16",
        OURS,
        statistics.median(r.rps for r in runs),
        "req/s",
        errors=errors,
    )


def _start_gateway(
    ctx: Run, name: str, upstream_port: int, extra: str, procs: list[Proc]
) -> tuple[Proc, int]:
    """``mcpkit gateway`` on a free port in front of the bench upstream (``extra``: more
    ``[[upstream]]`` keys), added to ``procs`` and answering: the process and its port."""
    port = free_port()
    config = Path(ctx.workdir) / f"{name}.toml"
    config.write_text(
        f'[[upstream]]\nname = "bench"\nurl = "http://127.0.0.1:{upstream_port}/mcp"\n{extra}'
    )
    gateway = Proc(
        [sys.executable, "-m", "mcpkit", "gateway", str(config), "--port", str(port)],
        ctx.settings.server_cpu,
        ctx.workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    procs.append(gateway)
    wait_http(port, gateway)
    return gateway, port


def _record_gateway_cpu(
    ctx: Run,
    label: str,
    conc: int,
    gateway_s: float,
    upstream_s: float,
    calls: float,
    ratio: str = GATEWAY_CPU,
) -> None:
    """CPU per forwarded call of the gateway and of its upstream, read from /proc around
    the same runs: their ratio does not depend on the machine's cores or its load."""
    ctx.record(
        f"{label} CPU per forwarded tools/call, c={conc}",
        OURS,
        gateway_s / calls * 1e6,
        "us",
        higher=False,
    )
    ctx.record(
        f"{label} upstream's CPU per call it serves, c={conc}",
        OURS,
        upstream_s / calls * 1e6,
        "us",
        higher=False,
    )
    if upstream_s:
        ctx.record(ratio, OURS, gateway_s / upstream_s, "ratio", higher=False)
