"""The MCP Server Card of ``mcpkit serve --http --server-card NAME``.

The experimental Server Card extension (SEP-2127, ``modelcontextprotocol/experimental-
ext-server-card``) describes a remote server for discovery before a client connects: its
reverse-DNS name, version, description and where to connect, with the protocol versions
served there.  It reserves ``GET <streamable-http-url>/server-card`` for it, answered with
the ``application/mcp-server-card+json`` media type, open CORS (public, read-only
metadata) and a cache lifetime.  The card is built once from the :class:`Server`; tools
and prompts are not in it (the extension leaves them to the live list requests).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..server.server import Server

__all__ = ["CARD_MEDIA_TYPE", "CARD_SCHEMA", "ServerCardFront", "check_card_name", "server_card"]

CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
CARD_MEDIA_TYPE = "application/mcp-server-card+json"
_NAME = re.compile(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+")
#: The extension's limit on ``description`` and ``title``.
_MAX_TEXT = 100


def check_card_name(name: str) -> str | None:
    """Why ``name`` cannot be a card's name (reverse DNS, one slash), or None."""
    if _NAME.fullmatch(name) and 3 <= len(name) <= 200:
        return None
    return f"--server-card {name!r}: a reverse-DNS name with one slash, like com.example/weather"


def server_card(server: Server, name: str, url: str, versions: list[str]) -> dict[str, Any]:
    """The card of ``server`` served at ``url`` (the Streamable HTTP endpoint)."""
    info = server.info
    card: dict[str, Any] = {
        "$schema": CARD_SCHEMA,
        "name": name,
        "version": server.version,
        "description": _short(info.get("description") or server.instructions)
        or f"The {server.name} MCP server",
        "remotes": [{"type": "streamable-http", "url": url, "supportedProtocolVersions": versions}],
    }
    title = _short(info.get("title"))
    if title:
        card["title"] = title
    if info.get("websiteUrl"):
        card["websiteUrl"] = info["websiteUrl"]
    return card


def _short(text: object) -> str:
    line = str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""
    return line if len(line) <= _MAX_TEXT else line[: _MAX_TEXT - 1] + "…"


class ServerCardFront:
    """``GET <path>/server-card`` answers the card; everything else (and the lifespan)
    goes to ``app``, the MCP app (``app`` is where the server's shutdown looks for it)."""

    def __init__(self, app: Any, path: str, card: dict[str, Any]) -> None:
        self.app = app
        self.card_path = path.rstrip("/") + "/server-card"
        self.body = json.dumps(card, indent=2, ensure_ascii=False).encode("utf-8")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.card_path:
            await self.app(scope, receive, send)
            return
        allowed = scope["method"] in ("GET", "HEAD", "OPTIONS")
        status = 200 if allowed else 405
        body = self.body if scope["method"] == "GET" else b""
        headers = [
            (b"content-type", CARD_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"public, max-age=3600"),
            (b"access-control-allow-origin", b"*"),
            (b"access-control-allow-methods", b"GET"),
            (b"access-control-allow-headers", b"Content-Type"),
        ]
        if not allowed:
            headers.append((b"allow", b"GET, HEAD, OPTIONS"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
