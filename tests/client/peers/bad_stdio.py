"""A stdio "server" that misbehaves in the way named by its first argument.

Written by hand (no MCP library) so each failure is exactly the one under test:

* ``garbage``       answers every request with a line that is not JSON
* ``exit-mid``      answers the probe, then exits (code 3) when the next request arrives
* ``silent``        reads everything, answers nothing
* ``crash``         prints a traceback-like message to stderr and exits 1 at once
* ``ignore-eof``    answers, but keeps running after stdin closes (needs SIGTERM)
* ``ignore-term``   like ignore-eof, and ignores SIGTERM too (needs SIGKILL)
* ``grandchild``    answers, and starts a child process that would outlive it; the child's
                    pid goes to the file named by the second argument
* ``legacy``        a legacy-only server: answers server/discover with ``legacy_error``
                    (second argument: a JSON error object, or ``none`` to stay silent),
                    then serves initialize / tools/list / tools/call
* ``reject-first``  a modern server that answers its first request with -32022
* ``print-junk``    prints a banner line on stdout before behaving
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
MODERN = "2026-07-28"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(rid: Any, value: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": value})


def error(rid: Any, code: int, message: str, data: Any = None) -> None:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"jsonrpc": "2.0", "id": rid, "error": err})


DISCOVER = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
    "ttlMs": 0,
    "cacheScope": "private",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": MODE, "version": "0"}},
}
TOOLS = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}


def main() -> None:
    if MODE == "crash":
        sys.stderr.write("Traceback (most recent call last):\nRuntimeError: cannot open database\n")
        sys.stderr.flush()
        sys.exit(1)
    if MODE == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if MODE == "grandchild":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)"], stdin=subprocess.DEVNULL
        )
        with open(ARG, "w") as f:
            f.write(str(child.pid))
    if MODE == "print-junk":
        print("Starting server v1.2 ...", flush=True)
    first = True
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        rid, method = message.get("id"), message.get("method")
        if rid is None:
            continue
        if MODE == "garbage":
            sys.stdout.write("this is { not json\n")
            sys.stdout.flush()
            continue
        if MODE == "silent":
            continue
        if MODE == "exit-mid" and not first:
            sys.stderr.write("fatal: worker pool exhausted\n")
            sys.stderr.flush()
            os._exit(3)
        if MODE == "reject-first" and first:
            first = False
            error(
                rid,
                -32022,
                "Unsupported protocol version",
                {"supported": [MODERN], "requested": "x"},
            )
            continue
        first = False
        if MODE == "legacy":
            if method == "server/discover":
                if ARG != "none":
                    err = json.loads(ARG)
                    error(rid, err["code"], err["message"])
                continue
            if method == "initialize":
                result(
                    rid,
                    {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "legacy", "version": "0"},
                    },
                )
            elif method == "tools/list":
                result(rid, TOOLS)
            elif method == "tools/call":
                result(rid, {"content": [{"type": "text", "text": "legacy echo"}]})
            else:
                error(rid, -32601, "Method not found")
            continue
        if method == "server/discover":
            result(rid, DISCOVER)
        elif method == "tools/list":
            result(rid, {**TOOLS, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        elif method == "tools/call":
            result(rid, {"content": [{"type": "text", "text": "ok"}], "resultType": "complete"})
        else:
            error(rid, -32601, "Method not found")
    # stdin closed
    if MODE in ("ignore-eof", "ignore-term"):
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
