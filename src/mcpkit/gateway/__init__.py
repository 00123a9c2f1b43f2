"""The gateway: one MCP front (both eras, HTTP or stdio) for many upstream servers, with
authentication (an OAuth 2.1 protected resource through :mod:`mcpkit.auth`),
per-method/tool/principal authorization (CEL conditions) and rate limits, caching, audit,
metrics and probes, live reload, and failover across upstream replicas.  Built from
:mod:`mcpkit.server` (the front), :mod:`mcpkit.client` (the upstreams) and
:mod:`mcpkit.auth`."""

from .app import GatewayApp
from .config import GatewayConfig, load_config
from .server import GatewayServer

__all__ = ["GatewayApp", "GatewayConfig", "GatewayServer", "load_config"]
