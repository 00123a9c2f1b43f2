"""Streamable HTTP server, as a plain ASGI application (see :mod:`.app`)."""

from .app import HttpOptions, McpHttpApp, create_app

__all__ = ["HttpOptions", "McpHttpApp", "create_app"]
