"""One client over several servers: ``Client.from_config`` on an ``mcpServers`` file.

    python examples/multi_server_client.py          # from the repository root

It reads ``examples/host.json``, the very file ``mcpkit host`` runs (the host's own keys,
such as ``permission`` and ``model``, are ignored by the client), adds an in-memory server
next to the file's two stdio servers, and uses all three through one client.  Names carry
their server: tools and prompts are ``server__name``, resource URIs gain the server as
their first segment (``note://today`` on ``quickstart`` is ``note://quickstart/today``).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from mcpkit import Server
from mcpkit.client import Client

notes = Server("notes")


@notes.tool
def remember(text: str) -> str:
    """Pretend to store a note (an in-memory server, no process)."""
    return f"noted: {text}"


async def main() -> None:
    config = json.loads((Path(__file__).parent / "host.json").read_text())
    config["mcpServers"]["notes"] = notes  # a Server object: served in memory
    async with Client.from_config(config) as client:
        for tool in await client.list_tools():
            print("tool:", tool["name"])
        added = await client.call_tool("quickstart__add", {"a": 2, "b": 3})
        print("quickstart__add ->", added.data)
        print(
            "notes__remember ->",
            (await client.call_tool("notes__remember", {"text": "milk"}))["content"][0]["text"],
        )
        for resource in await client.list_resources():
            print("resource:", resource["uri"])
        note = await client.read_resource("note://quickstart/today")
        print("note://quickstart/today ->", note["contents"][0]["text"])
        prompt = await client.get_prompt("quickstart__summarize", {"text": "MCP"})
        print("quickstart__summarize ->", prompt["messages"][0]["content"]["text"].splitlines()[0])


if __name__ == "__main__":
    anyio.run(main)
