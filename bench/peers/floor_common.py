"""The floor's MCP handling: parse the JSON-RPC body, dispatch on the method, answer the
same result shape as the frameworks, no validation beyond what dispatch needs."""

from __future__ import annotations

from typing import Any

SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "bench-floor", "version": "0"}}
TOOLS = [
    {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }
    for name, description in (
        ("echo", "Echo the text back."),
        ("progress_echo", "Report one progress notification, then echo the text back."),
    )
]


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC response to one request."""
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    modern = "_meta" in params and "io.modelcontextprotocol/protocolVersion" in params["_meta"]
    result: dict[str, Any]
    if method == "tools/call":
        text = params["arguments"]["text"]
        if not isinstance(text, str):
            error = {"code": -32602, "message": "text must be a string"}
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "bench-floor", "version": "0"},
        }
    else:
        error = {"code": -32601, "message": "Method not found"}
        return {"jsonrpc": "2.0", "id": rid, "error": error}
    if modern:
        result["resultType"] = "complete"
        result["_meta"] = SERVER_META
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def progress(msg: dict[str, Any]) -> dict[str, Any] | None:
    """The one progress notification ``progress_echo`` sends (when a token was given)."""
    params = msg.get("params") or {}
    if msg.get("method") != "tools/call" or params.get("name") != "progress_echo":
        return None
    token = (params.get("_meta") or {}).get("progressToken")
    if token is None:
        return None
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1, "total": 1},
    }
