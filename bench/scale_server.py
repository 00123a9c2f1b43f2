"""The HTTP servers the scale benchmarks talk to (bench/scale_streams.py, scale_gateway.py).

    python -m bench.scale_server streams PORT STATE_URL    # one server: echo, change_tools
    python -m bench.scale_server upstreams PORT COUNT TOOLS # COUNT servers at /u0 ... /uN-1

``streams``: the server listen streams and legacy GET streams hold on to; its
``change_tools`` tool announces a ``tools/list_changed`` (the fan-out being timed), and
with a shared ``STATE_URL`` (Redis) that change reaches the other replicas' streams too.
It allows 50,000 legacy sessions (the default cap is 10,000: the bench opens that many
and a few more).

``upstreams``: ``COUNT`` independent MCP servers of ``TOOLS`` tools each, every one at its
own path of one process, so a gateway can front 50 real HTTP upstreams without 50
interpreters competing for the machine's two cores.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

from mcpkit import Server
from mcpkit.transports.http import HttpOptions, McpHttpApp
from mcpkit.transports.http.server import serve_uvicorn


def streams_server() -> Server:
    server = Server("scale-streams", "1.0.0")

    @server.tool(inline=True)
    def echo(text: str) -> str:
        return text

    @server.tool(inline=True)
    def change_tools() -> str:
        server.notify_tools_changed()
        return "changed"

    return server


def upstream_server(index: int, tools: int) -> Server:
    server = Server(f"upstream-{index}", "1.0.0")
    for t in range(tools):

        def tool(a: int, b: str = "x") -> str:
            return b * a

        server.tool(
            tool, name=f"tool_{t}", description=f"Tool {t} of upstream {index}.", inline=True
        )
    return server


class PathRouter:
    """One ASGI app per path prefix; the lifespan enters every app's lifespan."""

    def __init__(self, apps: dict[str, McpHttpApp]) -> None:
        self.apps = apps

    @contextlib.asynccontextmanager
    async def _all(self) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for app in self.apps.values():
                await stack.enter_async_context(app.lifespan_context())
            yield

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            async with self._all():
                await send({"type": "lifespan.startup.complete"})
                message = await receive()
            assert message["type"] == "lifespan.shutdown"
            await send({"type": "lifespan.shutdown.complete"})
            return
        app = self.apps.get(scope.get("path", "").rstrip("/"))
        if app is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)


def profile_on_signal(path: str) -> None:
    """SIGUSR1 starts cProfile, the next SIGUSR1 writes its stats to ``path`` (to profile
    only the fan-out, not the set-up: ``MCPKIT_BENCH_PROFILE=path``)."""
    import cProfile
    import signal

    profiler = cProfile.Profile()
    running = [False]

    def toggle(*_: Any) -> None:
        if running[0]:
            profiler.disable()
            profiler.dump_stats(path)
        else:
            profiler.enable()
        running[0] = not running[0]

    signal.signal(signal.SIGUSR1, toggle)


def main(argv: list[str]) -> None:
    import os

    if os.environ.get("MCPKIT_BENCH_GC") == "default":
        # The A/B baseline of bench.scale_streams --gc-ab: CPython's own collector
        # settings, as before serve_uvicorn tuned them.
        from mcpkit.transports.http import server as http_server

        http_server.tune_gc = lambda: None
    if os.environ.get("MCPKIT_BENCH_PROFILE"):
        profile_on_signal(os.environ["MCPKIT_BENCH_PROFILE"])
    mode, port = argv[0], int(argv[1])
    if mode == "streams":
        server = streams_server()
        server.state = argv[2]
        app: Any = McpHttpApp(server, HttpOptions(max_sessions=50_000))
    else:
        count, tools = int(argv[2]), int(argv[3])
        app = PathRouter(
            {
                f"/u{i}": McpHttpApp(upstream_server(i, tools), HttpOptions(path=f"/u{i}"))
                for i in range(count)
            }
        )
    serve_uvicorn(app, "127.0.0.1", port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
