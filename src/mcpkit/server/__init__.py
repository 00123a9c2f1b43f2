"""The server framework (transport-free)."""

from .content import Audio, EmbeddedResource, Image, ResourceLink, Text
from .context import Context
from .registry import ToolError, ToolResult
from .server import Server

__all__ = [
    "Audio",
    "Context",
    "EmbeddedResource",
    "Image",
    "ResourceLink",
    "Server",
    "Text",
    "ToolError",
    "ToolResult",
]
