"""The server framework (transport-free)."""

from .content import Audio, EmbeddedResource, Image, ResourceLink, Text
from .context import Context
from .files import File
from .middleware import CallNext, Middleware
from .registry import ToolError, ToolResult
from .server import Server

__all__ = [
    "Audio",
    "CallNext",
    "Context",
    "EmbeddedResource",
    "File",
    "Image",
    "Middleware",
    "ResourceLink",
    "Server",
    "Text",
    "ToolError",
    "ToolResult",
]
