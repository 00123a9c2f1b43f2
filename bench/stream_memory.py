"""Memory for one oversized SSE event (issue #33): the peak RSS of a client and of a
gateway when a server answers a call with one event far over their limits.

    python -m bench.stream_memory                  # one 300 MiB event; a table
    python -m bench.stream_memory --size-mib 64 --json out.json
    python -m bench --only memory                  # the same, inside the bench's run

Three processes on 127.0.0.1, each started here:

* the **server** (``python -m bench.stream_memory serve``): a mcpkit server on uvicorn
  whose ``flood`` tool is answered with one SSE event of ``--size-mib`` MiB (a single
  ``data:`` line, sent as fast as the reader takes it); every other request reaches the
  real server (``hello``, discovery);
* the **client** (``python -m bench.stream_memory client URL``): ``Client`` over
  ``HttpTransport(max_message_bytes=LIMIT)`` calls ``hello``, then ``flood``, and reports
  its own ``VmHWM`` before and after (it should get an error naming the limit);
* the **gateway**: ``mcpkit gateway`` with ``max_result_bytes = LIMIT`` in front of the
  server; a raw 2026-07-28 ``tools/call`` of ``f_flood`` through it (the answer should be
  a JSON-RPC error naming the cap), its ``VmHWM`` read from ``/proc`` before and after.

The figure is the peak RSS growth of the call against the limit: a decoder that measures
while it reads holds the limit plus a buffer; one that assembles first holds the event
(and its copies).  Nothing is timed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from .contenders import Proc, free_port

if TYPE_CHECKING:
    from .record import Run

MIB = 1024 * 1024
SIZE_MIB = 300
LIMITS = {"client": 32 * MIB, "gateway": 1 * MIB}
MODERN = "2026-07-28"
OPEN_RESULT = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'
CLOSE_RESULT = b'"}]}}'


# ---------------------------------------------------------------------------- the server


def flood_app(size: int) -> Any:
    """The server's ASGI app: ``tools/call flood`` answered with one ``size``-byte event."""
    from mcpkit import Server
    from mcpkit.transports.http import McpHttpApp

    server = Server("flood")

    @server.tool()
    def hello(name: str) -> str:
        return f"hello {name}"

    @server.tool()
    def flood() -> str:  # answered below, never reached
        return ""

    inner = McpHttpApp(server)
    piece = b"x" * MIB

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body) if body else {}
        params = request.get("params") if isinstance(request, dict) else None
        if not (
            request.get("method") == "tools/call"
            and isinstance(params, dict)
            and params.get("name") == "flood"
        ):
            given = False

            async def replay() -> Any:
                nonlocal given
                if not given:
                    given = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await inner(scope, replay, send)
            return
        start = {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
        await send(start)
        opening = b"event: message\ndata: " + OPEN_RESULT.replace(
            b'"id":1', b'"id":' + json.dumps(request.get("id")).encode()
        )
        await send({"type": "http.response.body", "body": opening, "more_body": True})
        left = size
        while left > 0:  # (a reader that stopped reading holds us here; closing ends us)
            part = piece[: min(left, MIB)]
            await send({"type": "http.response.body", "body": part, "more_body": True})
            left -= len(part)
        await send({"type": "http.response.body", "body": CLOSE_RESULT + b"\n\n"})

    return app


def serve(port: int, size: int) -> None:
    import uvicorn

    uvicorn.run(flood_app(size), host="127.0.0.1", port=port, log_level="error")


# ---------------------------------------------------------------------------- the client


def hwm_kb(pid: int | str = "self") -> int:
    """The process's peak RSS so far (``VmHWM``), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


async def client_call(url: str, limit: int) -> dict[str, Any]:
    from mcpkit.client import Client, ClientError
    from mcpkit.transports.client_http import HttpTransport

    async with Client(HttpTransport(url, max_message_bytes=limit)) as client:
        await client.call_tool("hello", {"name": "warm"})
        before = hwm_kb()
        try:
            await client.call_tool("flood")
            outcome = "answered (no limit hit)"
        except ClientError as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        after = hwm_kb()
    return {"before_kb": before, "peak_kb": after, "outcome": outcome}


# ---------------------------------------------------------------------------- the measure


def _wait_http(url: str, proc: Proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise RuntimeError(f"{proc.cmd} exited with {proc.popen.returncode}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout}s")


def _gateway_call(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    response = httpx.post(url, content=json.dumps(body), headers=headers, timeout=600)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        lines = [ln[5:].strip() for ln in response.text.splitlines() if ln.startswith("data:")]
        answer: dict[str, Any] = json.loads(lines[-1])
        return answer
    decoded: dict[str, Any] = response.json()
    return decoded


def measure(size_mib: int = SIZE_MIB, progress: Any = print) -> dict[str, Any]:
    """Both measures against one server process; the figures in KiB."""
    size = size_mib * MIB
    results: dict[str, Any] = {"size_mib": size_mib, "limits": dict(LIMITS)}
    here = str(Path(__file__).resolve().parents[1])
    port = free_port()
    server = Proc(
        [sys.executable, "-m", "bench.stream_memory", "serve", str(port), str(size)], None, here
    )
    procs = [server]
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        _wait_http(url, server)
        progress(f"client: one {size_mib} MiB event, max_message_bytes {LIMITS['client']}")
        ran = subprocess.run(
            [sys.executable, "-m", "bench.stream_memory", "client", url, str(LIMITS["client"])],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if ran.returncode != 0:
            raise RuntimeError(f"the client failed: {ran.stderr[-2000:]}")
        results["client"] = json.loads(ran.stdout.strip().splitlines()[-1])
        progress(f"gateway: one {size_mib} MiB event, max_result_bytes {LIMITS['gateway']}")
        with tempfile.TemporaryDirectory(prefix="mcpkit-bench-memory-") as tmp:
            config = Path(tmp) / "gateway.toml"
            config.write_text(
                f'[gateway]\nstate = "memory:"\nmax_result_bytes = {LIMITS["gateway"]}\n'
                f'[[upstream]]\nname = "f"\nurl = "{url}"\nprefix = "f_"\n'
            )
            gw_port = free_port()
            gateway = Proc(
                [sys.executable, "-m", "mcpkit", "gateway", str(config), "--port", str(gw_port)],
                None,
                tmp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(gateway)
            gw_url = f"http://127.0.0.1:{gw_port}/mcp"
            _wait_http(f"http://127.0.0.1:{gw_port}/healthz", gateway)
            _wait_healthy(f"http://127.0.0.1:{gw_port}/healthz")
            _gateway_call(gw_url, "f_hello", {"name": "warm"})
            before = hwm_kb(gateway.pid)
            answer = _gateway_call(gw_url, "f_flood", {})
            after = hwm_kb(gateway.pid)
            error = answer.get("error")
            outcome = f"error: {error.get('message')}" if error else "answered (no cap hit)"
            results["gateway"] = {"before_kb": before, "peak_kb": after, "outcome": outcome}
            answer = _gateway_call(gw_url, "f_hello", {"name": "after"})
            results["gateway"]["next_call"] = "ok" if "result" in answer else str(answer)
    finally:
        for proc in reversed(procs):
            proc.stop()
    return results


def _wait_healthy(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if httpx.get(url, timeout=2).status_code == 200:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{url} not healthy within {timeout}s")


def table(results: dict[str, Any]) -> str:
    rows = [
        f"one {results['size_mib']} MiB SSE event",
        f"{'process':<9} {'limit':>10} {'RSS before':>11} {'peak RSS':>9} {'growth':>8}"
        f"  {'growth/limit':>12}  outcome",
    ]
    for role in ("client", "gateway"):
        figures = results.get(role)
        if figures is None:
            continue
        limit = results["limits"][role]
        growth = (figures["peak_kb"] - figures["before_kb"]) * 1024
        rows.append(
            f"{role:<9} {limit / MIB:>7.0f} MiB {figures['before_kb'] / 1024:>7.0f} MiB "
            f"{figures['peak_kb'] / 1024:>5.0f} MiB {growth / MIB:>4.0f} MiB"
            f"  {growth / limit:>11.2f}x  {figures['outcome'][:120]}"
        )
    return "\n".join(rows)


def bench_memory(run: Run) -> None:
    """``python -m bench --only memory``: the measure, its table among the run's notes."""
    size = 32 if run.settings.quick else SIZE_MIB
    results = measure(size, progress=lambda text: print(f"memory: {text}", flush=True))
    print(table(results))
    run.note("stream memory: " + json.dumps(results))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"]:
        serve(int(args[1]), int(args[2]))
        return 0
    if args[:1] == ["client"]:
        print(json.dumps(asyncio.run(client_call(args[1], int(args[2])))))
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.stream_memory")
    parser.add_argument("--size-mib", type=int, default=SIZE_MIB)
    parser.add_argument("--json", help="also write the figures here")
    options = parser.parse_args(args)
    results = measure(options.size_mib)
    print(table(results))
    print(f"(machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
