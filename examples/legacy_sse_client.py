"""Reach a server that still speaks the 2024-11-05 HTTP+SSE transport (``/sse`` + ``/messages``).

    python examples/legacy_sse_client.py http://127.0.0.1:8000/sse            # list its tools
    python examples/legacy_sse_client.py http://127.0.0.1:8000/sse shout '{"text": "hi"}'

Nothing special is asked of the client: ``Client(url)`` first tries Streamable HTTP, and
when the server refuses the ``initialize`` POST (405, 404 or 400) it GETs the same URL,
and the ``endpoint`` event that arrives proves the old transport (the spec's
backwards-compatibility rule).  ``Client(url, sse=True)`` would skip the first attempt.
A result's ``data`` is its structured content as plain JSON.
"""

from __future__ import annotations

import json
import sys

import anyio

from mcpkit.client import Client


async def main(url: str, tool: str | None, arguments: dict[str, object]) -> None:
    async with Client(url) as client:
        kind = type(client.transport).__name__
        print(
            f"connected over {kind}: {client.server_info.implementation['name']} "
            f"({client.era} era, {client.protocol_version})"
        )
        for each in await client.list_tools():
            print(f"  tool {each['name']}: {each.get('description', '')}")
        if tool is not None:
            result = await client.call_tool(tool, arguments, raise_on_error=True)
            texts = [b.get("text") for b in result["content"] if b.get("type") == "text"]
            print(f"{tool} -> {' '.join(str(t) for t in texts)} (data: {result.data!r})")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    name = sys.argv[2] if len(sys.argv) > 2 else None
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    anyio.run(main, sys.argv[1], name, args)
