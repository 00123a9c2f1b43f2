"""Listen streams at scale (issue #23): RSS per idle stream and the ``tools/list_changed``
fan-out, on one process and across three replicas on Redis.

    python -m bench.scale_streams                 # 100, 1,000, 10,000 streams; a table
    python -m bench.scale_streams --counts 100,1000 --json out.json
    python -m bench.scale_streams --base /tmp/before --counts 1000,10000 --rounds 3
                                                  # this tree against another, alternately

Three kinds of stream, each against a fresh ``bench/scale_server.py streams`` process
(uvicorn, as ``mcpkit serve --http``) on 127.0.0.1:

* ``modern``: 2026-07-28 ``subscriptions/listen`` POSTs asking for ``toolsListChanged``,
  each held open after its ``notifications/subscriptions/acknowledged``;
* ``legacy``: 2025-11-25 sessions (``initialize``, ``notifications/initialized``), each
  holding its standalone GET stream;
* ``replicas``: modern streams spread round-robin over three server processes sharing one
  ``redis-server`` (the change is made on the first; the others hear it through Redis);
* ``sessions`` (only when asked for): live 2025-11-25 sessions with no stream and no
  connection left open, for the RSS per session (no fan-out).

Per point: the server's RSS growth divided by the streams (measured once every stream is
established and idle, against the RSS after one stream was opened and closed: code paths
loaded); then one ``tools/call change_tools`` and the time until the last stream has read
its ``notifications/tools/list_changed``, and the server CPU time (user + system, from
/proc) the fan-out cost.  The clients are raw sockets in this one asyncio process (uvloop
when installed): with 10,000 streams, reading them is part of the measured time, and on a
shared two-core machine the fan-out time moves with the neighbours' load; the server CPU
per stream does much less.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODERN, LEGACY = "2026-07-28", "2025-11-25"
COUNTS = (100, 1_000, 10_000)
KINDS = ("modern", "legacy", "replicas")
SETUP_CONCURRENCY = 128
ACK = b"notifications/subscriptions/acknowledged"
CHANGED = b"notifications/tools/list_changed"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


@contextlib.contextmanager
def servers(
    count: int, state: str, gc_default: bool = False, tree: Path | None = None
) -> Iterator[list[tuple[int, subprocess.Popen[bytes]]]]:
    """``tree``: serve mcpkit from that tree's ``src`` (a `git archive` of another
    commit) instead of this one's."""
    env = dict(os.environ, MCPKIT_BENCH_GC="default" if gc_default else "tuned")
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src")
    procs = []
    try:
        for _ in range(count):
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "bench.scale_server", "streams", str(port), state],
                cwd=HERE.parent,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append((port, proc))
        for port, proc in procs:
            wait_port(port, proc)
        yield procs
    finally:
        for _, proc in procs:
            proc.terminate()
        for _, proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on {port} exited ({proc.returncode})")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"server on {port} did not start")


def _post(
    port: int,
    body: dict[str, Any],
    *,
    method: str | None = None,
    session: str | None = None,
    version: str = MODERN,
) -> bytes:
    data = json.dumps(body).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"MCP-Protocol-Version: {version}\r\n"
    )
    if method:
        head += f"Mcp-Method: {method}\r\n"
    if session:
        head += f"Mcp-Session-Id: {session}\r\n"
    return (head + f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def _meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench-scale", "version": "1"},
    }


def listen_request(port: int, i: int) -> bytes:
    params = {"notifications": {"toolsListChanged": True}, "_meta": _meta()}
    body = {"jsonrpc": "2.0", "id": i, "method": "subscriptions/listen", "params": params}
    return _post(port, body, method="subscriptions/listen")


async def read_response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One complete response with a Content-Length body (head, body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length)


def header(head: bytes, name: bytes) -> str:
    for line in head.split(b"\r\n"):
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip().decode()
    raise RuntimeError(f"no {name!r} in {head[:200]!r}")


class Fanout:
    """Counts the streams that have read the change; notes when the last one did."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.seen = 0
        self.last_at = 0.0
        self.all_seen = asyncio.Event()

    def hit(self) -> None:
        self.seen += 1
        if self.seen == self.total:
            self.last_at = time.perf_counter()
            self.all_seen.set()


async def hold(
    kind: str,
    port: int,
    i: int,
    ready: asyncio.Event,
    fanout: Fanout,
    gate: asyncio.Semaphore,
    writers: list[asyncio.StreamWriter],
) -> None:
    async with gate:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writers.append(writer)
        if kind in ("legacy", "sessions"):
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "bench-scale", "version": "1"},
                },
            }
            writer.write(_post(port, init, version=LEGACY))
            head, _ = await read_response(reader)
            session = header(head, b"mcp-session-id")
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            writer.write(_post(port, note, session=session, version=LEGACY))
            await read_response(reader)
            if kind == "sessions":  # a live session and no connection: what it holds
                writer.close()
                ready.set()
                return
            writer.write(
                f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                f"MCP-Protocol-Version: {LEGACY}\r\nMcp-Session-Id: {session}\r\n\r\n".encode()
            )
            marker = b"\r\n\r\n"  # the GET stream's head: it is established
        else:
            writer.write(listen_request(port, i))
            marker = ACK
        buffer = b""
        while marker not in buffer:
            chunk = await reader.read(65536)
            if not chunk:
                raise RuntimeError(f"stream {i} closed while opening: {buffer[:300]!r}")
            buffer += chunk
        ready.set()
    tail = buffer[-64:]
    while CHANGED not in tail:
        chunk = await reader.read(65536)
        if not chunk:
            return
        tail = tail[-64:] + chunk
    fanout.hit()


async def call_change(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = {
        "jsonrpc": "2.0",
        "id": "change",
        "method": "tools/call",
        "params": {"name": "change_tools", "arguments": {}, "_meta": _meta()},
    }
    writer.write(
        _post(port, body, method="tools/call").replace(
            b"Mcp-Method: tools/call\r\n", b"Mcp-Method: tools/call\r\nMcp-Name: change_tools\r\n"
        )
    )
    await read_response(reader)
    writer.close()


async def point(kind: str, ports: list[int], pids: list[int], n: int) -> dict[str, float]:
    # One stream opened and closed first: the code paths are loaded before the baseline.
    warm_writers: list[asyncio.StreamWriter] = []
    warm = Fanout(10**9)
    gate = asyncio.Semaphore(SETUP_CONCURRENCY)
    for port in ports:
        warm_task = asyncio.ensure_future(
            hold(kind, port, 0, asyncio.Event(), warm, gate, warm_writers)
        )
        while not warm_writers:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)
        warm_writers[-1].close()
        warm_task.cancel()
        with contextlib.suppress(BaseException):
            await warm_task
    await asyncio.sleep(0.5)
    base = sum(rss_kb(pid) for pid in pids)
    fanout = Fanout(n)
    writers: list[asyncio.StreamWriter] = []
    events = [asyncio.Event() for _ in range(n)]
    t0 = time.perf_counter()
    tasks = [
        asyncio.ensure_future(
            hold(kind, ports[i % len(ports)], i + 1, events[i], fanout, gate, writers)
        )
        for i in range(n)
    ]
    for event in events:
        await event.wait()
    setup_s = time.perf_counter() - t0
    await asyncio.sleep(2.0)  # idle
    rss = sum(rss_kb(pid) for pid in pids)
    if kind == "sessions":
        await asyncio.gather(*tasks, return_exceptions=True)
        return {
            "sessions": n,
            "setup_s": setup_s,
            "rss_base_kb": base,
            "rss_kb": rss,
            "rss_per_session_kb": (rss - base) / n,
        }
    cpu0 = sum(cpu_s(pid) for pid in pids)
    started = time.perf_counter()
    await call_change(ports[0])
    await asyncio.wait_for(fanout.all_seen.wait(), 120)
    fanout_s = fanout.last_at - started
    await asyncio.sleep(0.2)
    cpu = sum(cpu_s(pid) for pid in pids) - cpu0
    for writer in writers:
        writer.close()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "streams": n,
        "setup_s": setup_s,
        "rss_base_kb": base,
        "rss_kb": rss,
        "rss_per_stream_kb": (rss - base) / n,
        "fanout_ms": fanout_s * 1000,
        "fanout_server_cpu_ms": cpu * 1000,
    }


def run_point(
    kind: str, n: int, redis_url: str | None, gc_default: bool = False, tree: Path | None = None
) -> dict[str, float]:
    count = 3 if kind == "replicas" else 1
    state = redis_url if kind == "replicas" and redis_url else "memory:"
    with servers(count, state, gc_default, tree) as procs:
        ports = [port for port, _ in procs]
        pids = [proc.pid for _, proc in procs]
        loop_policy = None
        with contextlib.suppress(ImportError):
            import uvloop

            loop_policy = uvloop.EventLoopPolicy()
        if loop_policy is not None:
            asyncio.set_event_loop_policy(loop_policy)
        return asyncio.run(point(kind, ports, pids, n))


def measure(
    counts: tuple[int, ...] = COUNTS, kinds: tuple[str, ...] = KINDS, progress: Any = None
) -> dict[str, Any]:
    from bench.scale import redis_server

    say = progress or (lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    results: dict[str, Any] = {}
    with redis_server() as redis_url:
        for kind in kinds:
            if kind == "replicas" and redis_url is None:
                results.setdefault("notes", []).append("no redis-server: replicas skipped")
                continue
            for n in counts:
                say(f"scale: {n} {kind} streams")
                results.setdefault(kind, {})[n] = run_point(kind, n, redis_url)
    return results


def gc_ab(n: int, rounds: int) -> dict[str, Any]:
    """Modern streams, fan-out with CPython's collector settings (``before``) and with
    ``serve_uvicorn``'s (``after``: frozen start-up objects, young threshold 20,000),
    alternating; medians and after/before ratios."""
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for side in runs:
            runs[side].append(run_point("modern", n, None, gc_default=side == "before"))
    out: dict[str, Any] = {
        side: {
            k: statistics.median(r[k] for r in points)
            for k in ("fanout_ms", "fanout_server_cpu_ms", "rss_per_stream_kb")
        }
        for side, points in runs.items()
    }
    out["after/before"] = {k: out["after"][k] / out["before"][k] for k in out["after"]}
    out["runs"] = runs
    return out


AB_FIGURES = ("rss_per_stream_kb", "fanout_server_cpu_ms", "fanout_ms")


def tree_ab(
    base: Path, counts: tuple[int, ...], kinds: tuple[str, ...], rounds: int
) -> dict[str, Any]:
    """Each point served by ``base`` (``before``) and by this tree (``after``), one after
    the other, ``rounds`` times: medians and after/before ratios.  Both sides see the same
    neighbours on a shared machine, so the ratios are the figures to read."""
    out: dict[str, Any] = {}
    for kind in kinds:
        for n in counts:
            runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
            for _ in range(rounds):
                runs["before"].append(run_point(kind, n, None, tree=base))
                runs["after"].append(run_point(kind, n, None))
            point: dict[str, Any] = {
                side: {k: statistics.median(r[k] for r in samples) for k in AB_FIGURES}
                for side, samples in runs.items()
            }
            point["after/before"] = {
                k: point["after"][k] / point["before"][k] for k in AB_FIGURES if point["before"][k]
            }
            point["runs"] = runs
            out[f"{kind} {n}"] = point
    return out


def table(results: dict[str, Any]) -> str:
    lines = ["kind       streams  RSS/stream   fan-out   server CPU (fan-out)  setup"]
    for n, r in results.get("sessions", {}).items():
        lines.append(
            f"legacy sessions (no stream) {int(n):>7,}: "
            f"{r['rss_per_session_kb']:.1f} KB RSS per session"
        )
    for kind in KINDS:
        for n, r in results.get(kind, {}).items():
            lines.append(
                f"{kind:<9} {int(n):>8,}  {r['rss_per_stream_kb']:7.1f} KB  "
                f"{r['fanout_ms']:7.0f} ms  {r['fanout_server_cpu_ms']:8.0f} ms "
                f"({r['fanout_server_cpu_ms'] * 1000 / int(n):5.1f} µs/stream)  "
                f"{r['setup_s']:5.1f} s"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default=",".join(map(str, COUNTS)))
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"of {', '.join(KINDS)}, sessions")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--gc-ab",
        type=int,
        metavar="ROUNDS",
        help="instead: the collector A/B at the largest count",
    )
    parser.add_argument(
        "--base", type=Path, help="instead: this tree against BASE (has src/), alternately"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --base")
    args = parser.parse_args()
    counts = tuple(int(c) for c in args.counts.split(","))
    if args.base:
        kinds = tuple(k for k in args.kinds.split(",") if k in ("modern", "legacy"))
        ab = tree_ab(args.base, counts, kinds, args.rounds)
        for name, point in ab.items():
            for side in ("before", "after", "after/before"):
                print(f"{name:<14} {side:<13}", {k: round(v, 3) for k, v in point[side].items()})
        if args.json:
            args.json.write_text(json.dumps(ab, indent=2) + "\n")
        return 0
    if args.gc_ab:
        ab = gc_ab(max(counts), args.gc_ab)
        for side in ("before", "after", "after/before"):
            print(side, {k: round(v, 3) for k, v in ab[side].items()})
        if args.json:
            args.json.write_text(json.dumps(ab, indent=2) + "\n")
        return 0
    results = measure(counts, tuple(args.kinds.split(",")))
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
