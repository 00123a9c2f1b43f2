"""Build servers out of other things: proxies of other MCP servers (any era, any
transport), REST APIs described by OpenAPI (or an ASGI app in this process), and (with
:meth:`mcpkit.server.Server.mount` and ``transform_tool``) any mix of them under one.

At the host/gateway rank: a proxy is a server and a client at once, and an OpenAPI
server an HTTP client, which ``server/`` itself may not be (its layer imports neither
the client nor the transports: docs/architecture.md)."""

from .openapi import GET_AS_RESOURCES, Route, from_asgi, from_openapi
from .proxy import ProxyServer, UpstreamUnavailable, proxy

__all__ = [
    "GET_AS_RESOURCES",
    "ProxyServer",
    "Route",
    "UpstreamUnavailable",
    "from_asgi",
    "from_openapi",
    "proxy",
]
