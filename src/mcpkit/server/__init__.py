"""The server framework (transport-free)."""

from .apps import App
from .content import Audio, EmbeddedResource, Image, ResourceLink, Text
from .context import Context
from .middleware import CallNext, Middleware
from .registry import ToolError, ToolResult
from .server import Server
from .settings import Setting


def __getattr__(name: str) -> object:
    """``File`` (files and directories as resources) loads on first use."""
    if name == "File":
        from .files import File

        return File
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "App",
    "Audio",
    "CallNext",
    "Context",
    "EmbeddedResource",
    "File",
    "Image",
    "Middleware",
    "ResourceLink",
    "Server",
    "Setting",
    "Text",
    "ToolError",
    "ToolResult",
]
