"""mcpkit: the Model Context Protocol for Python, both eras, every role.

The public API is deliberately small; everything else is importable from its subpackage
but not promised.
"""

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

__version__ = "0.1.0"

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
