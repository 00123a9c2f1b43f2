"""Test server "bare": JSON-RPC over stdio written by hand, declaring ``tools`` only.

Like servers built on other SDKs, it answers every method it does not implement with
``-32601 Method not found`` (``prompts/list``, ``resources/list``...), so a host that asks
for a capability the server never declared gets that error back.
"""

from __future__ import annotations

import json
import sys

TOOL = {"name": "hello", "description": "Say hello.", "inputSchema": {"type": "object"}}


def answer(message: dict[str, object]) -> dict[str, object] | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:  # a notification
        return None
    if method == "initialize":
        params = message.get("params")
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        result: dict[str, object] = {
            "protocolVersion": version or "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bare", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "hello"}]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": ident, "error": error}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


for line in sys.stdin:
    reply = answer(json.loads(line))
    if reply is not None:
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
