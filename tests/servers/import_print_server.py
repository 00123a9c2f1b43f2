"""A stdio fixture server that prints while it is being imported (banners, library
warnings): that happens before the transport starts, and must not reach the protocol
stream either."""

from __future__ import annotations

from mcpkit import Server

print("Loading print-at-import server...")

server = Server("import-print-server", "0.0.1")


@server.tool
def ping_tool() -> str:
    return "pong"
