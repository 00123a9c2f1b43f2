"""Python calls per forwarded ``tools/call`` in the gateway: a count that does not depend on
the machine's load, to set beside the CPU figures of ``python -m bench --only gateway``
(issue #20).

usage: python -m bench.gateway_calls [--duration S] [--top N] [--save FILE]

mcpkit's HTTP server (``bench/peers/mcpkit_server.py``, the echo tool) runs as the upstream,
the gateway (one upstream, no prefix, no auth, default policy: the benchmark's) in this
process under uvicorn, and wrk drives it at c=16.  After a warm-up, cProfile counts every
call in the gateway's thread (Python functions and the builtins they call, uvicorn's
included) while wrk runs; the total over the calls answered is printed, with the
functions called most.  Run from this tree with ``PYTHONPATH=<tree>/src`` to count another
tree's gateway.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .contenders import META, PEERS_DIR, Proc, free_port
from .load import modern_headers, post, run_wrk, wait_http

CONCURRENCY = 16


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="seconds counted")
    parser.add_argument("--top", type=int, default=0, help="also list the N most called")
    parser.add_argument("--save", help="also write the profile to this file (pstats)")
    args = parser.parse_args(argv)
    from mcpkit.gateway.app import GatewayApp
    from mcpkit.gateway.config import load_config
    from mcpkit.transports.http import HttpOptions
    from mcpkit.transports.http.security import HostPolicy
    from mcpkit.transports.http.server import server_class, tune_gc, uvicorn_config

    upstream_port, gateway_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as work:
        config = Path(work) / "gateway.toml"
        config.write_text(
            f'[[upstream]]\nname = "bench"\nurl = "http://127.0.0.1:{upstream_port}/mcp"\n'
        )
        upstream = Proc(
            [
                *(sys.executable, "-m", "mcpkit", "serve", str(PEERS_DIR / "mcpkit_server.py")),
                *("--http", "--port", str(upstream_port)),
            ],
            None,
            work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_http(upstream_port, upstream)
            app = GatewayApp(
                load_config(config), HttpOptions(host_policy=HostPolicy.for_bind("127.0.0.1"))
            )
            server = _loop_recording(server_class())(uvicorn_config(app, "127.0.0.1", gateway_port))
            profile = cProfile.Profile()
            counted: dict[str, float] = {}
            driver = threading.Thread(
                target=_drive,
                args=(server, profile, gateway_port, args, counted),
                daemon=True,
            )
            driver.start()
            tune_gc()
            server.run()
            driver.join()
        finally:
            upstream.stop()
    if not counted.get("calls"):
        print("no call was answered", file=sys.stderr)
        return 1
    stats = pstats.Stats(profile)
    if args.save:
        stats.dump_stats(args.save)
    calls = counted["calls"]
    print(
        f"{stats.total_calls / calls:.1f} Python calls per forwarded tools/call "  # type: ignore[attr-defined]
        f"({calls:.0f} calls at c={CONCURRENCY}, {counted['errors']:.0f} errors)"
    )
    if args.top:
        rows = sorted(stats.stats.items(), key=lambda item: -item[1][1])  # type: ignore[attr-defined]
        for (path, line, function), (_, count, *_rest) in rows[: args.top]:
            where = f"{Path(path).name}:{line}" if path != "~" else "(builtin)"
            print(f"{count / calls:8.2f}  {where} {function}")
    return 0


def _drive(
    server: Any,
    profile: cProfile.Profile,
    gateway_port: int,
    args: argparse.Namespace,
    counted: dict[str, float],
) -> None:
    """wrk against the gateway, profiled after a warm-up; then the server is told to stop.
    (The profiler is switched in the gateway's own thread: it sees that thread only.)"""
    try:
        _wait_in_process(gateway_port)
        wrk_args = ["tools/call", "modern", "echo", "-"]
        run_wrk(gateway_port, CONCURRENCY, 2, wrk_args, None)  # warm-up: lists, connections
        loop = _loop_of(server)
        loop.call_soon_threadsafe(profile.enable)
        run = run_wrk(gateway_port, CONCURRENCY, args.duration, wrk_args, None)
        done = threading.Event()
        loop.call_soon_threadsafe(_stop, profile, done)
        done.wait(10)
        counted.update(calls=run.requests, errors=run.errors)
    finally:
        server.should_exit = True


def _stop(profile: cProfile.Profile, done: threading.Event) -> None:
    profile.disable()
    done.set()


def _wait_in_process(port: int, timeout: float = 60.0) -> None:
    """Until the gateway served in this process answers on ``port``."""
    deadline = time.monotonic() + timeout
    body = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": META}}
    while True:
        try:
            post(port, body, modern_headers("tools/list"))
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _loop_recording(base: type) -> type:
    """``base`` (a ``uvicorn.Server``) that records the event loop it serves on."""

    class LoopRecordingServer(base):  # type: ignore[misc]
        bench_loop: asyncio.AbstractEventLoop | None = None

        async def startup(self, *args: Any, **kw: Any) -> None:
            self.bench_loop = asyncio.get_running_loop()
            await super().startup(*args, **kw)

    return LoopRecordingServer


def _loop_of(server: Any) -> asyncio.AbstractEventLoop:
    """The event loop uvicorn serves on (set once it started)."""
    loop: asyncio.AbstractEventLoop | None = getattr(server, "bench_loop", None)
    if loop is None:
        raise RuntimeError("the gateway's server has no loop yet")
    return loop


if __name__ == "__main__":
    raise SystemExit(main())
