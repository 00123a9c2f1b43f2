"""A deliberately misbehaving stdio "MCP server" (stdlib only) for client-side tests.

``python hostile_server.py MODE``; it answers ``server/discover`` like a 2026-07-28 server
and ``tools/call`` by echoing ``arguments.nonce``, and misbehaves according to MODE:

* ``junk``     - writes non-JSON lines to stdout before every answer;
* ``stray``    - before each answer sends answers for ids nobody asked for (unknown,
  the right number as a string, booleans, fractions), and after it a second answer
  with the same id: a client must drop them all;
* ``huge``     - answers ``tools/call`` with a 40 MiB line (never finished by a newline);
* ``deaf``     - never reads stdin after the handshake (its pipe fills up);
* ``stubborn`` - ignores SIGTERM and stdin EOF; starts a child process (pid written to
  ``$HOSTILE_CHILD_PID``) that also outlives everything it can;
* ``flood``    - sends 10,000 progress notifications before each ``tools/call`` answer;
* ``deep-schema`` - lists a tool whose ``inputSchema`` nests 1,000 arrays deep (valid JSON,
  under every parser's depth limit) next to an ordinary tool.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
OUT = sys.stdout.buffer


def send(message: object) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method = message.get("method")
    rid = message.get("id")
    if rid is None:
        return None
    if method == "server/discover":
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "public",
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "1"}
                },
            },
        }
    if method == "tools/list":
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"},
        }
    if method == "tools/call":
        nonce = ((message.get("params") or {}).get("arguments") or {}).get("nonce")
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {"resultType": "complete", "content": [{"type": "text", "text": str(nonce)}]},
        }
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}}


def main() -> None:
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "time.sleep(300)",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        path = os.environ.get("HOSTILE_CHILD_PID")
        if path:
            with open(path, "w") as fh:
                fh.write(str(child.pid))
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        reply = answer(message)
        if reply is None:
            continue
        method = message.get("method")
        if MODE == "junk":
            OUT.write(b"this is not json\n{broken\n\n[1,2]\n")
            OUT.flush()
        if MODE == "stray" and method == "tools/call":
            rid = message["id"]
            for fake in (
                999_999,
                str(rid),
                True,
                False,
                None,
                rid + 0.5 if isinstance(rid, int) else 1.5,
            ):
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": fake,
                        "result": {
                            "resultType": "complete",
                            "content": [{"type": "text", "text": "STRAY"}],
                        },
                    }
                )
        if MODE == "flood" and method == "tools/call":
            meta = (message.get("params") or {}).get("_meta") or {}
            token = meta.get("progressToken")
            if token is not None:
                chunk = []
                for i in range(1, 10_001):
                    chunk.append(
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "method": "notifications/progress",
                                "params": {"progressToken": token, "progress": i},
                            }
                        )
                    )
                OUT.write(("\n".join(chunk) + "\n").encode())
                OUT.flush()
        if MODE == "deep-schema" and method == "tools/list":
            deep = "[" * 1000 + "]" * 1000
            OUT.write(
                (
                    '{"jsonrpc":"2.0","id":'
                    + json.dumps(message["id"])
                    + ',"result":{"resultType":'
                    '"complete","ttlMs":0,"cacheScope":"public","tools":[{"name":"deep","inputSchema":'
                    '{"type":"object","allOf":'
                    + deep
                    + '}},{"name":"ok","inputSchema":{"type":"object"}}]}}\n'
                ).encode()
            )
            OUT.flush()
            continue
        if MODE == "huge" and method == "tools/call":
            block = b'{"jsonrpc":"2.0","id":' + str(message["id"]).encode() + b',"result":{"x":"'
            OUT.write(block)
            piece = b"y" * (1 << 20)
            for _ in range(40):
                OUT.write(piece)
            OUT.flush()
            time.sleep(3600)
        send(reply)
        if MODE == "stray" and method == "tools/call":
            send(
                {
                    **reply,
                    "result": {
                        "resultType": "complete",
                        "content": [{"type": "text", "text": "SECOND ANSWER"}],
                    },
                }
            )
        if MODE == "deaf" and method == "server/discover":
            time.sleep(3600)
    if MODE == "stubborn":
        while True:  # ignore EOF too
            time.sleep(1)


if __name__ == "__main__":
    main()
