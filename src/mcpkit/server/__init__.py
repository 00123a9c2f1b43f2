"""The server framework (transport-free)."""

from .content import Audio, EmbeddedResource, Image, ResourceLink, Text
from .context import Context
from .middleware import CallNext, Middleware
from .registry import ToolError, ToolResult
from .server import Server

__all__ = [
    "Audio",
    "CallNext",
    "Context",
    "EmbeddedResource",
    "Image",
    "Middleware",
    "ResourceLink",
    "Server",
    "Text",
    "ToolError",
    "ToolResult",
]
