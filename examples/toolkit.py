"""The server toolkit: typed elicitation, docstring descriptions, files and caching.

    mcpkit serve examples/toolkit.py --http --port 8000   # serve it (or without --http: stdio)
    python examples/toolkit.py                            # a short in-process tour

* ``book`` asks the user with ``ctx.elicit("...", Booking)`` and gets a ``Booking`` back
  (or a declined/cancelled outcome); on 2026-07-28 that is an MRTR round, on 2025-11-25 a
  server-to-client request, with the same code;
* ``forecast`` documents its parameters in a Google-style ``Args:`` section: they become
  the parameter descriptions of its input schema;
* ``docs://examples`` lists this directory and ``docs://examples/{path}`` reads a file in
  it (paths that leave the directory answer as missing files); ``chart`` returns an image
  read from a file, its MIME type taken from the name;
* ``ResponseCache`` answers ``forecast`` (``readOnlyHint``) from the state backend for 30 s.
"""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel

from mcpkit import Context, Image, Server
from mcpkit.protocol.negotiation import RequestMeta
from mcpkit.server.elicitation import Accepted, Declined
from mcpkit.server.files import DirectoryResource
from mcpkit.server.middleware.cache import ResponseCache

HERE = Path(__file__).resolve().parent
#: A 1x1 PNG, written to the temporary directory on first use.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = Server("toolkit-demo", "1.0.0", middleware=[ResponseCache(ttl_s=30)])
server.add_resource(DirectoryResource(HERE, "docs://examples", recursive=False))


class Booking(BaseModel):
    name: str
    seats: int = 2
    meal: Literal["veg", "meat"] = "veg"


@server.tool
async def book(restaurant: str, ctx: Context) -> str:
    """Book a table, asking the user for the details."""
    got = await ctx.elicit(f"Book a table at {restaurant}?", Booking)
    if isinstance(got, Accepted):
        return f"Booked {got.data.seats} seats for {got.data.name} ({got.data.meal})"
    return "Not booked" if isinstance(got, Declined) else "Cancelled"


@server.tool(annotations={"readOnlyHint": True}, inline=True)
def forecast(city: str, days: int = 1) -> str:
    """Weather forecast.

    Args:
        city: The city's name, e.g. "Oslo".
        days: How many days ahead (1-7).
    """
    return f"{city}: sunny for {days} day(s)"


@server.tool
def chart() -> Image:
    """A chart, read from a PNG file (the MIME type comes from the file name)."""
    path = Path(tempfile.gettempdir()) / "mcpkit-toolkit-chart.png"
    if not path.exists():
        path.write_bytes(PIXEL)
    return Image(path=path)


async def tour() -> None:
    meta = RequestMeta(
        "modern", "2026-07-28", {"elicitation": {"form": {}}}, {"name": "tour", "version": "1"}
    )

    async def call(name: str, params: dict[str, Any]) -> dict[str, Any]:
        return await server.call("tools/call", {"name": name, **params}, meta=meta)

    async with server.running():
        listed = await server.call("tools/list", meta=meta)
        schema = next(t for t in listed["tools"] if t["name"] == "forecast")["inputSchema"]
        print("forecast.city ->", schema["properties"]["city"]["description"])
        first = await call("book", {"arguments": {"restaurant": "Chez Ada"}})
        (key, asked), *_ = first["inputRequests"].items()
        print("book asks for ->", sorted(asked["params"]["requestedSchema"]["properties"]))
        answer = {"action": "accept", "content": {"name": "Ada", "seats": 4}}
        done = await call(
            "book",
            {
                "arguments": {"restaurant": "Chez Ada"},
                "inputResponses": {key: answer},
                "requestState": first["requestState"],
            },
        )
        print("book ->", done["content"][0]["text"])
        print("chart ->", (await call("chart", {}))["content"][0]["mimeType"])
        listing = await server.call("resources/read", {"uri": "docs://examples"}, meta=meta)
        print("docs://examples has toolkit.py ->", "toolkit.py" in listing["contents"][0]["text"])
        try:
            await server.call(
                "resources/read", {"uri": "docs://examples/..%2FREADME.md"}, meta=meta
            )
        except Exception as exc:
            print("docs://examples/..%2FREADME.md ->", exc)


if __name__ == "__main__":
    anyio.run(tour)
