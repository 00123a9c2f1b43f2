"""mcpkit: the Model Context Protocol for Python, both eras, every role.

The public API is deliberately small; everything else is importable from its subpackage
but not promised.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from .types.lazy import lazy_exports as _lazy_exports

if _TYPE_CHECKING:
    from .server import (
        Audio,
        Context,
        EmbeddedResource,
        Image,
        ResourceLink,
        Server,
        Text,
        ToolError,
        ToolResult,
    )
    from .types.errors import McpError

#: Public name -> the module that defines it.  Imported on first use (PEP 562), so
#: ``import mcpkit.client`` does not pay for the server framework and vice versa.
_EXPORTS = {
    "Audio": "mcpkit.server",
    "Context": "mcpkit.server",
    "EmbeddedResource": "mcpkit.server",
    "Image": "mcpkit.server",
    "ResourceLink": "mcpkit.server",
    "Server": "mcpkit.server",
    "Text": "mcpkit.server",
    "ToolError": "mcpkit.server",
    "ToolResult": "mcpkit.server",
    "McpError": "mcpkit.types.errors",
}


__getattr__ = _lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = "0.1.0"
"""The package version: the one place it is written (pyproject reads it from here)."""

__all__ = [
    "Audio",
    "Context",
    "EmbeddedResource",
    "Image",
    "McpError",
    "ResourceLink",
    "Server",
    "Text",
    "ToolError",
    "ToolResult",
    "__version__",
]
