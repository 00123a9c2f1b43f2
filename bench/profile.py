"""CPU cost of mcpkit's own code per request, without a socket, a server or a client.

    python -m bench.profile http-call        # the ASGI app, driven in-process
    python -m bench.profile stdio --cprofile # the stdio endpoint, with a cProfile listing

Modes: http-call, http-sse, http-list (2026-07-28 POSTs to McpHttpApp), stdio, stdio-modern
(lines through the stdio Endpoint and StdioServer), inproc (``server.call``).  Reports the
best of three runs of process CPU time per request: less sensitive to a busy machine than
wall-clock throughput, and it isolates what mcpkit adds on top of uvicorn or the pipes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

from mcpkit_server import server

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
CALL = {"name": "echo", "arguments": {"text": "hello world"}}


def http_request(mode: str) -> tuple[dict[str, Any], bytes]:
    method = "tools/list" if mode == "http-list" else "tools/call"
    tool = "progress_echo" if mode == "http-sse" else "echo"
    meta = dict(META, progressToken="p") if mode == "http-sse" else META
    params: dict[str, Any] = {"_meta": meta}
    if method == "tools/call":
        params.update(name=tool, arguments={"text": "hello world"})
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", method.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if method == "tools/call":
        headers.append((b"mcp-name", tool.encode()))
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}, body


async def http_driver(mode: str, app: Any) -> Callable[[], Awaitable[Any]]:
    scope, body = http_request(mode)
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def one() -> Any:
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        sent.clear()
        await app(scope, receive, send)
        assert b"hello world" in sent[-1]["body"] or mode == "http-list", sent
        return sent[-1]

    return one


async def stdio_driver(mode: str) -> tuple[Callable[[], Awaitable[Any]], Any]:
    from mcpkit.runtime.endpoint import Endpoint
    from mcpkit.transports.stdio import StdioServer

    out: list[bytes] = []

    async def write(data: bytes) -> None:
        out.append(data)

    stdio = StdioServer(server)
    endpoint = Endpoint(write, stdio.on_request, stdio.on_notification)
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def chunks() -> Any:
        while (chunk := await queue.get()) is not None:
            yield chunk

    params = dict(CALL, _meta=META) if mode == "stdio-modern" else CALL
    counter = 0

    async def one() -> Any:
        nonlocal counter
        counter += 1
        before = len(out)
        line = {"jsonrpc": "2.0", "id": counter, "method": "tools/call", "params": params}
        queue.put_nowait(orjson.dumps(line) + b"\n")
        while len(out) == before:
            await asyncio.sleep(0)
        return out[-1]

    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
    queue.put_nowait(orjson.dumps(init) + b"\n")
    queue.put_nowait(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    task = asyncio.get_running_loop().create_task(endpoint.run(chunks()))
    await asyncio.sleep(0.05)
    return one, (queue, task)


async def main(mode: str, n: int, profile: bool) -> None:
    from mcpkit.transports.http import McpHttpApp

    server.state = "memory:"
    stop: Any = None
    app = McpHttpApp(server)
    async with app.lifespan_context():  # starts the server once, as uvicorn's lifespan does
        if mode.startswith("http"):
            one = await http_driver(mode, app)
        elif mode.startswith("stdio"):
            one, stop = await stdio_driver(mode)
        else:

            async def one() -> Any:
                return await server.call("tools/call", CALL)

        for _ in range(max(1000, n // 10)):
            await one()
        best = []
        for _ in range(3):
            start = time.process_time()
            for _ in range(n):
                await one()
            best.append(time.process_time() - start)
        print(f"{mode}: {min(best) / n * 1e6:.1f} µs of CPU per request")
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(n):
                await one()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        if stop is not None:
            queue, task = stop
            queue.put_nowait(None)
            await task


def cli() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    modes = ("http-call", "http-sse", "http-list", "stdio", "stdio-modern", "inproc")
    ap.add_argument("mode", choices=modes)
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--cprofile", action="store_true")
    args = ap.parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(main(args.mode, args.n, args.cprofile))
    else:
        uvloop.run(main(args.mode, args.n, args.cprofile))


if __name__ == "__main__":
    cli()
