"""Talk to any MCP server with the mcpkit client: both eras, stdio or HTTP.

    python examples/client_basics.py                            # spawns quickstart.py (stdio)
    python examples/client_basics.py http://127.0.0.1:8000/mcp      # or any server URL

The client probes with ``server/discover`` and falls back to ``initialize`` for older
servers; input the server asks for (here: the user's name for ``greet``) is answered by the
callbacks, whether the server uses 2026-07-28 input_required rounds or 2025 requests.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

from mcpkit.client import Client


async def ask_user(params: dict[str, Any]) -> dict[str, Any]:
    """Elicitation callback: a real app would show a form; we answer from a script."""
    print(f"server asks: {params.get('message')}")
    return {"action": "accept", "content": {"name": "Ada"}}


async def main() -> None:
    here = Path(__file__).resolve().parent
    target: Any = (
        sys.argv[1]
        if len(sys.argv) > 1
        else [sys.executable, "-m", "mcpkit", "serve", str(here / "quickstart.py")]
    )
    async with Client(target, elicitation=ask_user) as client:
        print(
            f"connected: {client.server_info.implementation} ({client.era} era, "
            f"{client.protocol_version})"
        )
        for tool in await client.list_tools():
            print(f"  tool {tool['name']}: {tool.get('description', '')}")
        result = await client.call_tool("add", {"a": 2, "b": 3})
        print("add ->", result.get("structuredContent"))
        greeting = await client.call_tool("greet", {})
        print("greet ->", greeting["content"][0]["text"])
        note = await client.read_resource("note://today")
        print("note ->", note["contents"][0].get("text"))


if __name__ == "__main__":
    anyio.run(main)
