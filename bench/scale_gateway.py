"""A gateway fronting 1, 10 and 50 upstreams (issue #23): the merged ``tools/list`` time,
cached and cold, and the gateway's memory per upstream.

    python -m bench.scale_gateway                  # a table
    python -m bench.scale_gateway --counts 1,10 --json out.json

The upstreams are real Streamable HTTP servers of ``TOOLS`` tools each, all served by one
``bench/scale_server.py upstreams`` process at /u0 ... /u49 (fifty interpreters would
measure the machine's two cores, not the gateway).  For each count, two ``mcpkit
gateway`` processes are started in turn on a TOML file listing that many upstreams: one
with ``cache = true`` (the default: listings kept for the upstream's ``ttlMs``), one with
``cache = false`` (every ``tools/list`` asks every upstream: the cold path).  A "walk" is
every page of the merged ``tools/list`` over one keep-alive connection; the figures are
medians of several walks, wall time and the gateway's CPU time (user + system, /proc).
The RSS is the gateway's after its first walk; the memory per upstream is the slope
between the smallest and the largest count.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.scale_streams import HERE, MODERN, cpu_s, free_port, rss_kb, wait_port

COUNTS = (1, 10, 50)
TOOLS = 20
WALKS_CACHED = 30
WALKS_COLD = 10


@contextlib.contextmanager
def process(cmd: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        cmd, cwd=HERE.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_port(port, proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def walk(client: httpx.Client, url: str) -> int:
    """Every page of the merged listing; how many tools it had."""
    tools, cursor, n = 0, None, 0
    while True:
        n += 1
        params: dict[str, Any] = {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench-scale", "version": "1"},
            }
        }
        if cursor:
            params["cursor"] = cursor
        message = {"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": params}
        response = client.post(
            url,
            json=message,
            headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/list",
            },
        )
        response.raise_for_status()
        result = response.json()["result"]
        tools += len(result["tools"])
        cursor = result.get("nextCursor")
        if not cursor:
            return tools


def gateway_point(
    upstream_port: int, count: int, cache: bool, walks: int, workdir: Path
) -> dict[str, float]:
    config = workdir / f"gateway-{count}-{cache}.toml"
    lines = ["[gateway]", f"cache = {'true' if cache else 'false'}", "metrics = false", ""]
    for i in range(count):
        lines += [
            "[[upstream]]",
            f'name = "u{i}"',
            f'url = "http://127.0.0.1:{upstream_port}/u{i}"',
            f'prefix = "u{i}_"',
            "",
        ]
    config.write_text("\n".join(lines))
    port = free_port()
    cmd = [sys.executable, "-m", "mcpkit", "gateway", str(config), "--port", str(port)]
    with process(cmd, port) as proc, httpx.Client(timeout=60) as client:
        deadline = time.monotonic() + 60
        while client.get(f"http://127.0.0.1:{port}/readyz").status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"gateway with {count} upstreams never became ready")
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        listed = walk(client, url)
        assert listed == count * TOOLS, (listed, count)
        time.sleep(0.5)
        rss = rss_kb(proc.pid)
        wall, cpu = [], []
        for _ in range(walks):
            c0, t0 = cpu_s(proc.pid), time.perf_counter()
            walk(client, url)
            wall.append(time.perf_counter() - t0)
            cpu.append(cpu_s(proc.pid) - c0)
        return {
            "upstreams": count,
            "tools": listed,
            "rss_kb": rss,
            "list_ms": statistics.median(wall) * 1000,
            "list_cpu_ms": statistics.mean(cpu) * 1000,
        }  # mean: /proc ticks are 10 ms


def measure(counts: tuple[int, ...] = COUNTS, progress: Any = None) -> dict[str, Any]:
    say = progress or (lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    results: dict[str, Any] = {"cached": {}, "cold": {}}
    upstream_port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "bench.scale_server",
        "upstreams",
        str(upstream_port),
        str(max(counts)),
        str(TOOLS),
    ]
    with tempfile.TemporaryDirectory() as tmp, process(cmd, upstream_port):
        for count in counts:
            for cache in (True, False):
                label = "cached" if cache else "cold"
                say(f"scale: gateway, {count} upstreams, {label}")
                results[label][count] = gateway_point(
                    upstream_port, count, cache, WALKS_CACHED if cache else WALKS_COLD, Path(tmp)
                )
    points = results["cached"]
    low, high = min(points), max(points)
    if high > low:
        results["rss_per_upstream_kb"] = (points[high]["rss_kb"] - points[low]["rss_kb"]) / (
            high - low
        )
    return results


def table(results: dict[str, Any]) -> str:
    lines = ["upstreams  tools  gateway RSS   tools/list cached (CPU)   cold (CPU)"]
    for count, cached in results["cached"].items():
        cold = results["cold"].get(count, {})
        lines.append(
            f"{int(count):>9}  {int(cached['tools']):>5}  {cached['rss_kb'] / 1024:7.1f} MiB"
            f"   {cached['list_ms']:7.2f} ms ({cached['list_cpu_ms']:5.2f})"
            f"      {cold.get('list_ms', 0):7.2f} ms ({cold.get('list_cpu_ms', 0):5.2f})"
        )
    if "rss_per_upstream_kb" in results:
        lines.append(f"gateway memory per upstream: {results['rss_per_upstream_kb']:.0f} KB")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default=",".join(map(str, COUNTS)))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = measure(tuple(int(c) for c in args.counts.split(",")))
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
