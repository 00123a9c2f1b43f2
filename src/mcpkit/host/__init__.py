"""The mcpkit host: many MCP servers, each behind its own client, one policy, one model loop.

::

    from mcpkit.host import Host, load_config

    async with Host(load_config("mcp.json"), interaction=my_ui) as host:
        for tool in await host.list_tools():
            print(tool.qualified_name, tool.description)

Layering: the host imports the client, never the server.  Everything public is listed in
``__all__``; other names in this package may change.
"""

from .apps import AppDocument, AppError, build_csp, prepare_app
from .config import ConfigError, HostConfig, ModelConfig, ServerConfig, load_config, parse_config
from .connection import ServerConnection, ServerUnavailable
from .host import Host, Interaction, ToolCancelled, ToolDenied
from .policy import (
    AuditEntry,
    AuditTrail,
    ConsentCallback,
    ConsentDecision,
    ConsentRequest,
    Permission,
    Policy,
)
from .tools import HostTool, model_schema
from .trust import TrustStore

__all__ = [
    "AppDocument",
    "AppError",
    "AuditEntry",
    "AuditTrail",
    "ConfigError",
    "ConsentCallback",
    "ConsentDecision",
    "ConsentRequest",
    "Host",
    "HostConfig",
    "HostTool",
    "Interaction",
    "ModelConfig",
    "Permission",
    "Policy",
    "ServerConfig",
    "ServerConnection",
    "ServerUnavailable",
    "ToolCancelled",
    "ToolDenied",
    "TrustStore",
    "build_csp",
    "load_config",
    "model_schema",
    "parse_config",
    "prepare_app",
]
