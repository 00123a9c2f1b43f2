"""How mcpkit's cost grows with its load (issue #23).

    python -m bench --only scale        # inside the benchmark run (rows in its table)
    python -m bench.scale --json bench-scale.json --charts   # alone: tables, JSON, PNGs
    python -m bench.scale --axes streams --stream-counts 100,1000

Each axis is measured at several points so the figures show a curve:

* **catalog size** (10, 1,000, 10,000 tools, in process): registering the tools;
  ``tools/list`` per page (the first walk, which builds the listing, and a warm one);
  ``tools/call`` of one tool (median of many), which should not depend on the catalog;
* **task records** (1,000 and 100,000 records, SQLite and Redis, in process): ``tasks/get``
  of random existing records (median and p99), which should stay flat.  Redis needs
  ``redis-server`` on the PATH (started on a free 127.0.0.1 port, no persistence);
* **listen streams** (100, 1,000, 10,000; modern, legacy GET, three replicas on Redis;
  plus 10,000 bare legacy sessions): RSS per stream and the ``tools/list_changed``
  fan-out, over real sockets (bench/scale_streams.py);
* **gateway** (1, 10, 50 upstreams): merged ``tools/list`` cached and cold, RSS per
  upstream (bench/scale_gateway.py);
* **reaping** (100,000 expired records in SQLite and memory; 10,000 legacy sessions): the
  longest pause a batch imposes, and the session reaper's pass (bench/scale_state.py).

``--charts`` draws each curve as a PNG under bench/charts/ (bench/charts.py, matplotlib
from the ``bench`` extra).  Timings on a shared machine move with its load: compare points
of one run, not runs.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

CATALOG_SIZES = (10, 1_000, 10_000)
RECORD_COUNTS = (1_000, 100_000)
CALLS = 2_000
GETS = 2_000
TASKS_CAPS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def _meta(caps: dict[str, Any] | None = None) -> Any:
    from mcpkit.protocol.negotiation import RequestMeta

    return RequestMeta("modern", "2026-07-28", caps or {})


def _server_with(n: int) -> tuple[Any, float]:
    """A server with ``n`` tools (plus ``echo``); the seconds registering them took."""
    from mcpkit import Server

    server = Server("scale", "1.0.0")

    @server.tool(inline=True)
    def echo(text: str) -> str:
        return text

    t0 = time.perf_counter()
    for i in range(n):

        def tool(a: int, b: str = "x") -> str:
            return b * a

        server.tool(tool, name=f"tool_{i}", description=f"Tool number {i}.")
    return server, time.perf_counter() - t0


async def catalog(n: int) -> dict[str, float]:
    server, register_s = _server_with(n)
    meta = _meta()
    out: dict[str, float] = {"register_s": register_s}
    for walk in ("cold", "warm"):
        pages: list[float] = []
        cursor: str | None = None
        while True:
            params = {"cursor": cursor} if cursor else {}
            t0 = time.perf_counter()
            page = await server.call("tools/list", params, meta=meta)
            pages.append(time.perf_counter() - t0)
            cursor = page.get("nextCursor")
            if not cursor:
                break
        out[f"list_{walk}_page_median_us"] = statistics.median(pages) * 1e6
        out[f"list_{walk}_first_page_us"] = pages[0] * 1e6
        out["pages"] = len(pages)
    call = {"name": "echo", "arguments": {"text": "hi"}}
    samples = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        await server.call("tools/call", call, meta=meta)
        samples.append(time.perf_counter() - t0)
    out["call_median_us"] = statistics.median(samples) * 1e6
    return out


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                tmp,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", port), 0.2),
                ):
                    break
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(10)


async def task_records(url: str, count: int) -> dict[str, float]:
    """``tasks/get`` latency with ``count`` task records in the backend at ``url``."""
    from mcpkit import Server

    server = Server("scale-tasks", "1.0.0", state=url)

    @server.tool(task="optional")
    async def job() -> str:
        return "done"

    backend = server.state
    ids = [f"task_bench_{count}_{i}" for i in range(count)]
    t0 = time.perf_counter()
    gate = anyio.Semaphore(64)

    async def put(task_id: str) -> None:
        async with gate:
            record = server.tasks.new_record(task_id, None)
            record.update(
                status="completed", result={"content": [{"type": "text", "text": "done"}]}
            )
            await backend.set_json(f"task:{task_id}", record, 3600)

    async with anyio.create_task_group() as tg:
        for task_id in ids:
            tg.start_soon(put, task_id)
    fill_s = time.perf_counter() - t0
    meta = _meta(TASKS_CAPS)
    rng = random.Random(count)
    samples = []
    for _ in range(GETS):
        task_id = rng.choice(ids)
        t0 = time.perf_counter()
        got = await server.call("tasks/get", {"taskId": task_id}, meta=meta)
        samples.append(time.perf_counter() - t0)
        assert got["status"] == "completed"
    samples.sort()
    await backend.aclose()
    return {
        "fill_s": fill_s,
        "get_median_us": statistics.median(samples) * 1e6,
        "get_p99_us": samples[int(len(samples) * 0.99) - 1] * 1e6,
    }


AXES = ("catalog", "tasks", "streams", "gateway", "state")


def measure(
    progress: Any = None, axes: tuple[str, ...] = AXES, stream_counts: tuple[int, ...] | None = None
) -> dict[str, Any]:
    say = progress or (lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    results: dict[str, Any] = {}
    if "catalog" in axes:
        results["catalog"] = {}
        for n in CATALOG_SIZES:
            say(f"scale: catalog of {n} tools")
            results["catalog"][n] = anyio.run(catalog, n)
    if "tasks" in axes:
        results["tasks"] = tasks_axis(say, results)
    if "streams" in axes:
        from bench import scale_streams

        counts = stream_counts or scale_streams.COUNTS
        results["streams"] = scale_streams.measure(counts, progress=say)
        sessions = scale_streams.measure((max(counts),), ("sessions",), progress=say)
        results["sessions"] = sessions.get("sessions", {})
    if "gateway" in axes:
        from bench import scale_gateway

        results["gateway"] = scale_gateway.measure(progress=say)
    if "state" in axes:
        from bench import scale_state

        results["state"] = scale_state.measure(progress=say)
    return results


def tasks_axis(say: Any, results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, redis_server() as redis_url:
        for count in RECORD_COUNTS:
            say(f"scale: {count} task records in SQLite")
            url = f"sqlite:///{tmp}/tasks-{count}.db"
            out.setdefault("sqlite", {})[count] = anyio.run(task_records, url, count)
            if redis_url is None:
                continue
            say(f"scale: {count} task records in Redis")
            db = RECORD_COUNTS.index(count) + 1  # one database per point: no carry-over
            url = redis_url[: -len("/0")] + f"/{db}"
            out.setdefault("redis", {})[count] = anyio.run(task_records, url, count)
        if redis_url is None:
            results.setdefault("notes", []).append(
                "redis-server not found: the Redis points were skipped"
            )
    return out


def table(results: dict[str, Any]) -> str:
    lines = []
    if results.get("catalog"):
        lines.append(
            "catalog size  register     tools/list: 1st page cold, page median warm  "
            "tools/call median"
        )
        for n, r in results["catalog"].items():
            lines.append(
                f"{int(n):>12,}  {r['register_s'] * 1000:8.1f} ms  "
                f"{r['list_cold_first_page_us']:9.0f} µs, {r['list_warm_page_median_us']:5.0f}"
                f" µs ({int(r['pages']):>3} pages)          {r['call_median_us']:7.1f} µs"
            )
        lines.append("")
    if results.get("tasks"):
        lines.append("backend  records   fill      tasks/get median   p99")
        for backend, points in results["tasks"].items():
            for count, r in points.items():
                lines.append(
                    f"{backend:<7}  {int(count):>7,}  {r['fill_s']:6.1f} s  "
                    f"{r['get_median_us']:10.0f} µs  {r['get_p99_us']:8.0f} µs"
                )
        lines.append("")
    if results.get("streams"):
        from bench import scale_streams

        lines.append(
            scale_streams.table({**results["streams"], "sessions": results.get("sessions", {})})
        )
        lines.append("")
    if results.get("gateway"):
        from bench import scale_gateway

        lines.append(scale_gateway.table(results["gateway"]))
        lines.append("")
    if results.get("state"):
        from bench import scale_state

        lines.append(scale_state.table(results["state"]))
    return "\n".join(lines)


def bench_scale(run: Any) -> None:
    """The ``scale`` section of ``python -m bench`` (rows: mcpkit only)."""
    results = measure(run.progress)
    for n, r in results["catalog"].items():
        run.record(f"scale: register {n} tools", "mcpkit", r["register_s"] * 1000, "ms", False)
        run.record(
            f"scale: tools/list page, {n} tools (warm)",
            "mcpkit",
            r["list_warm_page_median_us"],
            "µs",
            False,
        )
        run.record(f"scale: tools/call, {n} tools", "mcpkit", r["call_median_us"], "µs", False)
    for backend, points in results["tasks"].items():
        for count, r in points.items():
            run.record(
                f"scale: tasks/get, {count} records ({backend})",
                "mcpkit",
                r["get_median_us"],
                "µs",
                False,
            )
    for kind, points in results["streams"].items():
        if kind == "notes":
            continue
        for n, r in points.items():
            run.record(
                f"scale: RSS per {kind} stream, {n} streams",
                "mcpkit",
                r["rss_per_stream_kb"],
                "KB",
                False,
            )
            run.record(
                f"scale: list_changed fan-out, {n} {kind} streams",
                "mcpkit",
                r["fanout_ms"],
                "ms",
                False,
            )
    for n, r in results["sessions"].items():
        run.record(
            f"scale: RSS per legacy session, {n} sessions",
            "mcpkit",
            r["rss_per_session_kb"],
            "KB",
            False,
        )
    for label in ("cached", "cold"):
        for n, r in results["gateway"][label].items():
            run.record(
                f"scale: gateway tools/list ({label}), {n} upstreams",
                "mcpkit",
                r["list_ms"],
                "ms",
                False,
            )
    for name, r in results["state"]["reaper"].items():
        run.record(
            f"scale: longest reaper batch, 100,000 expired ({name})",
            "mcpkit",
            r["batch_max_ms"],
            "ms",
            False,
        )
    run.record(
        "scale: legacy session reap pass, 10,000 live",
        "mcpkit",
        results["state"]["sessions"]["reap_nothing_ms"],
        "ms",
        False,
    )
    for text in results.get("notes", []):
        run.note(text)
    print(table(results))


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description="issue #23's scale axes")
    parser.add_argument("--axes", default=",".join(AXES), help=f"of {', '.join(AXES)}")
    parser.add_argument("--stream-counts", help="listen streams per point (100,1000,10000)")
    parser.add_argument("--json", type=Path, default=Path("bench-scale.json"))
    parser.add_argument(
        "--charts", action="store_true", help="draw bench/charts/*.png (needs the bench extra)"
    )
    args = parser.parse_args()
    counts = tuple(int(c) for c in args.stream_counts.split(",")) if args.stream_counts else None
    results = measure(axes=tuple(args.axes.split(",")), stream_counts=counts)
    print(table(results))
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"JSON written to {args.json}")
    if args.charts:
        from bench.charts import draw

        for path in draw(results):
            print(f"chart: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
