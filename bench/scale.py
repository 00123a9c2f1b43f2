"""How mcpkit's cost grows with the catalog and with the task store (issue #23).

    python -m bench --only scale        # inside the benchmark run (rows in its table)
    python -m bench.scale               # alone: a table and bench-scale.json

Two axes, each measured at several points so the figures show a curve, in process (no
transport: the growth is in the server and the state backend, not on the wire):

* **catalog size** (10, 1,000, 10,000 tools): registering the tools; ``tools/list`` per
  page (the first walk, which builds the listing, and a warm one); ``tools/call`` of one
  tool (median of many), which should not depend on the catalog's size;
* **task records** (1,000 and 100,000 records, SQLite and Redis): ``tasks/get`` of random
  existing records (median and p99), which should stay flat.  Redis needs
  ``redis-server`` on the PATH (started on a free 127.0.0.1 port, no persistence).

Timings on a shared machine move with its load: compare points of one run, not runs.
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
TASKS_CAPS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


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
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", port), 0.2
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
            record.update(status="completed", result={"content": [{"type": "text",
                                                                   "text": "done"}]})
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


def measure(progress: Any = None) -> dict[str, Any]:
    say = progress or (lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    results: dict[str, Any] = {"catalog": {}, "tasks": {}}
    for n in CATALOG_SIZES:
        say(f"scale: catalog of {n} tools")
        results["catalog"][n] = anyio.run(catalog, n)
    with tempfile.TemporaryDirectory() as tmp, redis_server() as redis_url:
        for count in RECORD_COUNTS:
            say(f"scale: {count} task records in SQLite")
            url = f"sqlite:///{tmp}/tasks-{count}.db"
            results["tasks"].setdefault("sqlite", {})[count] = anyio.run(task_records, url, count)
            if redis_url is None:
                continue
            say(f"scale: {count} task records in Redis")
            db = RECORD_COUNTS.index(count) + 1  # one database per point: no carry-over
            url = redis_url[: -len("/0")] + f"/{db}"
            results["tasks"].setdefault("redis", {})[count] = anyio.run(task_records, url, count)
        if redis_url is None:
            results["notes"] = ["redis-server not found: the Redis points were skipped"]
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        "catalog size  register     tools/list: 1st page cold, page median warm  "
        "tools/call median",
    ]
    for n, r in results["catalog"].items():
        lines.append(
            f"{int(n):>12,}  {r['register_s'] * 1000:8.1f} ms  "
            f"{r['list_cold_first_page_us']:9.0f} µs, {r['list_warm_page_median_us']:5.0f} µs"
            f" ({int(r['pages']):>3} pages)          {r['call_median_us']:7.1f} µs"
        )
    lines.append("")
    lines.append("backend  records   fill      tasks/get median   p99")
    for backend, points in results["tasks"].items():
        for count, r in points.items():
            lines.append(
                f"{backend:<7}  {int(count):>7,}  {r['fill_s']:6.1f} s  "
                f"{r['get_median_us']:10.0f} µs  {r['get_p99_us']:8.0f} µs"
            )
    return "\n".join(lines)


def bench_scale(run: Any) -> None:
    """The ``scale`` section of ``python -m bench`` (rows: mcpkit only)."""
    results = measure(run.progress)
    for n, r in results["catalog"].items():
        run.record(f"scale: register {n} tools", "mcpkit", r["register_s"] * 1000, "ms", False)
        run.record(f"scale: tools/list page, {n} tools (warm)", "mcpkit",
                   r["list_warm_page_median_us"], "µs", False)
        run.record(f"scale: tools/call, {n} tools", "mcpkit", r["call_median_us"], "µs", False)
    for backend, points in results["tasks"].items():
        for count, r in points.items():
            run.record(f"scale: tasks/get, {count} records ({backend})", "mcpkit",
                       r["get_median_us"], "µs", False)
    for text in results.get("notes", []):
        run.note(text)
    print(table(results))


def main() -> int:
    results = measure()
    print(table(results))
    Path("bench-scale.json").write_text(json.dumps(results, indent=2) + "\n")
    print("JSON written to bench-scale.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
