"""Composition: one server built from an in-process server, a proxied stdio server and a
REST API, with a tool reshaped on the way.

    python examples/composition.py          # lists and calls everything in memory
    mcpkit serve examples/composition.py    # serves the composed server over stdio

* ``main.mount(weather, namespace="weather")``: a live in-process mount (``weather_forecast``).
* ``proxy([...quickstart...])``: the quickstart server in its own process, over stdio,
  mounted as ``qs`` (``qs_add``, ``qs_echo``, ``note://qs/today``).
* ``from_asgi(api, spec)``: a tiny ASGI app (no framework) described by an OpenAPI
  document; each operation is a tool, mounted as ``api`` (``api_get_quote``).
* ``transform_tool``: ``qs_add`` becomes ``plus``, its ``b`` argument hidden at 10.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.compose import from_asgi, proxy

HERE = Path(__file__).resolve().parent

# --- an ordinary server, mounted in process ------------------------------------------
weather = Server("weather")


@weather.tool
def forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"Sunny in {city}"


# --- a REST API: a raw ASGI app and its OpenAPI description ----------------------------
QUOTES = {"1": "Simple is better than complex.", "2": "Readability counts."}
SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Quotes", "version": "1.0"},
    "paths": {
        "/quotes/{quote_id}": {
            "get": {
                "operationId": "get_quote",
                "summary": "One quote by id",
                "parameters": [
                    {
                        "name": "quote_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "enum": sorted(QUOTES)},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "The quote",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"text": {"type": "string"}},
                                    "required": ["text"],
                                }
                            }
                        },
                    },
                    "404": {"description": "No such quote"},
                },
            }
        }
    },
}


async def quotes_api(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """GET /quotes/{id} -> {"text": ...}, or 404."""
    quote = QUOTES.get(scope["path"].rsplit("/", 1)[-1])
    status, body = (200, {"text": quote}) if quote else (404, {"detail": "no such quote"})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


# --- the composed server ----------------------------------------------------------------
server = Server("composed")
server.mount(weather, namespace="weather")
quickstart = [sys.executable, "-m", "mcpkit", "serve", str(HERE / "quickstart.py"),
              "--state", "memory:"]  # fmt: skip
server.mount(proxy(quickstart, name="quickstart"), namespace="qs")
server.mount(from_asgi(quotes_api, SPEC), namespace="api")
server.transform_tool(
    "qs_add",
    new_name="plus",
    description="Add 10 to a number.",
    args={"a": {"name": "number"}, "b": {"hide": True, "default": 10}},
)


async def main() -> None:
    async with Client(server) as client:
        for tool in await client.list_tools():
            print("tool", tool["name"])
        forecast = await client.call_tool("weather_forecast", {"city": "Lisbon"})
        print("weather_forecast ->", forecast["content"][0]["text"])
        plus = await client.call_tool("plus", {"number": 5})
        print("plus ->", plus["structuredContent"])
        quote = await client.call_tool("api_get_quote", {"quote_id": "2"})
        print("api_get_quote ->", quote["structuredContent"])
        note = await client.read_resource("note://qs/today")
        print("note://qs/today ->", note["contents"][0]["text"])


if __name__ == "__main__":
    anyio.run(main)
