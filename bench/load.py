"""The load side over HTTP: a raw JSON-RPC client (the readiness probe, the legacy
handshake, what kind of answer a server gives) and wrk with bench/mcp.lua, whose figures come
back as a :class:`WrkRun`."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .contenders import LEGACY, LEGACY_INITIALIZE, LUA, META, MODERN, OURS, Proc, _pin, free_port
from .record import Run


def post(
    port: int, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        all_headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        }
        conn.request("POST", "/mcp", json.dumps(body), all_headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    out = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        out["Mcp-Name"] = name
    return out


def wait_http(port: int, proc: Proc, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    body = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": META}}
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise RuntimeError(f"server exited early: {' '.join(proc.cmd)}")
        try:
            post(port, body, modern_headers("tools/list"))
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not answer on port {port}")


def legacy_session(port: int) -> str:
    """initialize + notifications/initialized; returns the Mcp-Session-Id."""
    init = LEGACY_INITIALIZE
    status, headers, body = post(port, init, {"MCP-Protocol-Version": LEGACY})
    sid = headers.get("mcp-session-id")
    if status != 200 or not sid:
        raise RuntimeError(f"initialize failed: {status} {body[:200]!r}")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    post(port, note, {"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": sid})
    return sid


def probe_content_type(port: int, mode: str, session: str) -> str:
    """What kind of answer the contender gives to the measured tools/call."""
    tool = "progress_echo" if mode == "modern-sse" else "echo"
    params: dict[str, Any] = {"name": tool, "arguments": {"text": "hello world"}}
    if mode == "legacy":
        headers = {"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": session}
    else:
        params["_meta"] = dict(META, progressToken="p") if tool == "progress_echo" else META
        headers = modern_headers("tools/call", tool)
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    status, got, body = post(port, request, headers)
    kind = got.get("content-type", "?").split(";")[0]
    if status != 200 or b"hello world" not in body:
        return f"{kind} (HTTP {status}, unexpected body)"
    return kind


_RESULT = re.compile(r"RESULT (.*)")


@dataclass(frozen=True)
class WrkRun:
    """What one wrk run measured (bench/mcp.lua prints it on its ``RESULT`` line)."""

    requests: float
    rps: float
    p50_ms: float
    p99_ms: float
    errors: float


def run_wrk(port: int, conc: int, duration: float, args: list[str], cpu: int | None) -> WrkRun:
    """One wrk run (whole seconds: wrk runs for its full duration)."""
    cmd = [
        "wrk",
        "-t1",
        f"-c{conc}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        f"http://127.0.0.1:{port}/mcp",
        "--",
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_pin(cpu), timeout=600)
    match = _RESULT.search(done.stdout)
    if match is None:
        raise RuntimeError(f"wrk failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    fields = {k: float(v) for k, v in (kv.split("=") for kv in match.group(1).split())}
    errors = sum(fields[k] for k in fields if k.startswith("err_")) + fields["bad"]
    return WrkRun(
        requests=fields["requests"],
        rps=fields["requests"] / (fields["duration_us"] / 1e6),
        p50_ms=fields["p50_us"] / 1000,
        p99_ms=fields["p99_us"] / 1000,
        errors=errors,
    )


def serve_ours_http(ctx: Run, env: dict[str, str] | None = None) -> tuple[Proc, int]:
    """mcpkit's HTTP server (modern JSON answers) on a free port, output discarded; the
    caller waits for it (:func:`wait_http`) and stops it."""
    port = free_port()
    proc = Proc(
        ctx.contenders[OURS].http_cmd("modern-json", port),
        ctx.settings.server_cpu,
        ctx.workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    return proc, port
