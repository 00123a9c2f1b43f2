"""An MCP extension: custom methods next to tools, on both protocol eras and every transport.

The extension ``com.example/notes`` adds three methods to MCP:

* ``com.example/notes/add`` (request): params ``{"text": str, "tags": [str]}``, result a
  ``Note``; the server also sends ``com.example/notes/added`` (notification) on the
  request's stream;
* ``com.example/notes/search`` (request): params ``{"tag": str}``, result ``{"notes": [...]}``;
* ``com.example/notes/clear`` (notification from the client): forget every note.

The server declares it under ``capabilities.extensions`` (``{"com.example/notes":
{"maxNotes": 100}}``; 2026-07-28 only, the 2025-11-25 schema has no such capability).  Run it, then call it::

    mcpkit serve examples/notes_extension.py --http --port 8001
    python examples/notes_extension.py --client      # a client in memory, printing results
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import anyio

from mcpkit import Context, Server
from mcpkit.client import Client

server = Server("notes", "1.0.0", instructions="Notes, through the com.example/notes extension.")
server.extension("com.example/notes", {"maxNotes": 100})

_notes: list[Note] = []


@dataclass
class Note:
    id: int
    text: str
    tags: list[str] = field(default_factory=list)


@dataclass
class Found:
    notes: list[Note]


@server.method("com.example/notes/add")
async def add_note(text: str, ctx: Context, tags: list[str] | None = None) -> Note:
    """Keep a note; tell the client with ``com.example/notes/added``."""
    if len(_notes) >= 100:
        _notes.pop(0)
    note = Note(len(_notes) + 1, text, tags or [])
    _notes.append(note)
    await ctx.notify("com.example/notes/added", {"id": note.id})
    return note


@server.method("com.example/notes/search")
def search_notes(tag: str) -> Found:
    """Every note carrying ``tag``."""
    return Found([n for n in _notes if tag in n.tags])


@server.notification_handler("com.example/notes/clear")
def clear_notes() -> None:
    """Forget every note (a notification: nothing is answered)."""
    _notes.clear()


@server.tool
def count_notes() -> int:
    """How many notes there are (a plain tool, beside the extension)."""
    return len(_notes)


async def demo() -> None:
    """A client in memory: call the extension's methods and receive its notification."""
    added: list[int] = []
    async with Client(server) as client:
        client.on_notification("com.example/notes/added", lambda params: added.append(params["id"]))
        print("extensions:", client.server_info.capabilities["extensions"])
        note = await client.request(
            "com.example/notes/add", {"text": "buy figs", "tags": ["shop"]}, result_type=Note
        )
        print("added:", note)
        found = await client.request("com.example/notes/search", {"tag": "shop"}, result_type=Found)
        print("found:", [n.text for n in found.notes])
        await client.notify("com.example/notes/clear")
        print("notified:", added)


if __name__ == "__main__":
    if "--client" in sys.argv:
        anyio.run(demo)
    else:
        server.run()
