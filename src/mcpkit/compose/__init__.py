"""Build servers out of other things: proxies of other MCP servers (any era, any
transport), and (with :meth:`mcpkit.server.Server.mount`) several of them under one.

At the host/gateway rank: a proxy is a server and a client at once, which ``server/``
itself may not be (see DESIGN.md, "Composition instead of special cases")."""

from .proxy import ProxyServer, UpstreamUnavailable, proxy

__all__ = ["ProxyServer", "UpstreamUnavailable", "proxy"]
