"""The gateway: one MCP front (both eras, HTTP or stdio) for many upstream servers, with
authentication, per-method/tool/principal authorization and rate limits, caching, audit
and metrics.  Built from :mod:`mcpkit.server` (the front) and :mod:`mcpkit.client` (the
upstreams)."""

from .app import GatewayApp
from .config import GatewayConfig, load_config
from .server import GatewayServer

__all__ = ["GatewayApp", "GatewayConfig", "GatewayServer", "load_config"]
