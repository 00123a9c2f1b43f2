"""The raw stdio load generator: one process, blocking ``os.write``/``os.read`` on the
server's pipes, no asyncio, no framework.  Every contender's server gets this same driver.

usage: python stdio_driver.py CALLS WINDOW SERVER_CPU|- -- SERVER_COMMAND...

Starts the server (pinned to SERVER_CPU), sends ``initialize`` and
``notifications/initialized``, warms up, then measures sequential ``tools/call`` (one in
flight), pipelined ``tools/call`` (WINDOW in flight) and sequential calls of the
2026-07-28 kind (``_meta`` on each request, skipped when the server refuses them).  Prints
one JSON line.  Every request has a fresh id; every answer is decoded and its id checked.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

loads: Callable[[bytes], Any]
try:
    from orjson import loads
except ImportError:  # pragma: no cover - the bench venv has orjson
    from json import loads

CALL = {"name": "echo", "arguments": {"text": "hello world"}}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _template(method: str, params: dict[str, Any]) -> bytes:
    """``%d`` where the id goes: one formatting per request, no JSON encoding."""
    body = json.dumps(params, separators=(",", ":")).replace("%", "%%")
    return f'{{"jsonrpc":"2.0","id":%d,"method":"{method}","params":{body}}}\n'.encode()


class Conn:
    def __init__(self, cmd: list[str], cpu: int | None) -> None:
        pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buffer = b""
        self.next_id = 0

    def send(self, data: bytes) -> None:
        sent = os.write(self.wfd, data)
        while sent < len(data):  # a pipe takes 64 KiB at once; only big windows get here
            sent += os.write(self.wfd, data[sent:])

    def response(self, rid: int | None) -> dict[str, Any]:
        """The next response (notifications are skipped); it must answer ``rid`` (when
        given: pipelined answers may come in any order)."""
        while True:
            end = self.buffer.find(b"\n")
            while end < 0:
                chunk = os.read(self.rfd, 1 << 16)
                if not chunk:
                    raise RuntimeError("server closed stdout")
                self.buffer += chunk
                end = self.buffer.find(b"\n")
            line = self.buffer[:end]
            self.buffer = self.buffer[end + 1 :]
            msg = loads(line)
            if "method" in msg:
                continue
            if rid is not None and msg.get("id") != rid:
                raise RuntimeError(f"answer to {msg.get('id')!r}, expected {rid}")
            if "error" in msg:
                raise RuntimeError(f"error response: {msg['error']}")
            return dict(msg)

    def call(self, template: bytes) -> dict[str, Any]:
        self.next_id += 1
        self.send(template % self.next_id)
        return self.response(self.next_id)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def sequential(conn: Conn, template: bytes, n: int) -> dict[str, float]:
    lat = [0] * n
    clock = time.perf_counter_ns
    call = conn.call
    start = clock()
    for i in range(n):
        t = clock()
        reply = call(template)
        lat[i] = clock() - t
    wall = (clock() - start) / 1e9
    if "hello world" not in json.dumps(reply):
        raise RuntimeError(f"unexpected answer: {reply}")
    lat.sort()
    return {
        "rps": n / wall,
        "p50_ms": lat[n // 2] / 1e6,
        "p99_ms": lat[min(n - 1, int(n * 0.99))] / 1e6,
    }


def pipelined(conn: Conn, template: bytes, n: int, window: int) -> float:
    first = conn.next_id + 1
    start = time.perf_counter()
    burst = min(window, n)
    conn.send(b"".join(template % (first + i) for i in range(burst)))
    sent = burst
    pending = set(range(first, first + burst))
    for _ in range(n):
        rid = conn.response(None).get("id")
        if rid not in pending:
            raise RuntimeError(f"answer to {rid!r}, which is not in flight")
        pending.discard(rid)
        if sent < n:
            pending.add(first + sent)
            conn.send(template % (first + sent))
            sent += 1
    conn.next_id = first + n - 1
    return n / (time.perf_counter() - start)


def main() -> None:
    sep = sys.argv.index("--")
    calls, window, cpu_arg = sys.argv[1:sep]
    cmd = sys.argv[sep + 1 :]
    n, win = int(calls), int(window)
    conn = Conn(cmd, None if cpu_arg == "-" else int(cpu_arg))
    try:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        conn.call(_template("initialize", init))
        conn.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        legacy = _template("tools/call", CALL)
        modern = _template("tools/call", dict(CALL, _meta=MODERN_META))
        for _ in range(max(200, n // 10)):
            conn.call(legacy)
        try:
            modern_ok = "hello world" in json.dumps(conn.call(modern))
        except RuntimeError:
            modern_ok = False
        gc.collect()
        gc.disable()  # the driver allocates next to nothing: no collector pauses in a run
        out: dict[str, Any] = {"seq": sequential(conn, legacy, n)}
        out["pipe"] = pipelined(conn, legacy, n, win)
        out["modern"] = sequential(conn, modern, n) if modern_ok else None
    finally:
        conn.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
