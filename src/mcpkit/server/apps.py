"""MCP Apps for server authors: a tool's view, written with ``@server.tool(app=App(...))``.

An :class:`App` is the tool's HTML view (the ``io.modelcontextprotocol/ui`` extension).
Registering a tool with one writes everything the extension asks of a server:

* the ``ui://`` resource (``text/html;profile=mcp-app``, left out of ``resources/list``),
  whose content ``_meta.ui`` carries the view's ``csp``, ``permissions``, ``domain`` and
  ``prefersBorder``;
* the tool's ``_meta.ui`` (``resourceUri``, and ``visibility`` when given);
* the extension entry under ``capabilities.extensions``.

Several tools may share one ``App`` (one resource).  The HTML is a string (``html=``) or a
file (``path=``, read on each ``resources/read``, so edits show without a restart).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import Server

__all__ = ["APP_MIME_TYPE", "UI_EXTENSION", "App"]

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
#: ``_meta.ui.csp`` members (ext-apps 2026-01-26): lists of origins.
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
#: ``_meta.ui.permissions`` members the view may ask for.
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
VISIBILITY = ("model", "app")


@dataclass(frozen=True)
class App:
    """A tool's view: ``uri`` (``ui://...``), its HTML (``html`` or ``path``: exactly one),
    and what it asks of the host: ``csp`` (``{"connectDomains": [...], ...}``; none: the
    host's restrictive default), ``permissions`` (``["camera", ...]``), a dedicated
    ``domain``, ``prefers_border``; ``visibility`` of the tool (``["app"]``: only the view
    may call it, the model does not see it)."""

    uri: str
    html: str | None = None
    path: str | os.PathLike[str] | None = None
    csp: Mapping[str, Sequence[str]] | None = None
    permissions: Sequence[str] = ()
    domain: str | None = None
    prefers_border: bool | None = None
    visibility: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri.startswith("ui://"):
            raise ValueError(f"App uri must start with 'ui://', got {self.uri!r}")
        if (self.html is None) == (self.path is None):
            raise ValueError("App takes exactly one of html= (a string) or path= (a file)")
        if self.path is not None and not Path(self.path).is_file():
            raise ValueError(f"App path {os.fspath(self.path)!r} is not a file")
        for key, value in (self.csp or {}).items():
            if key not in CSP_KEYS:
                raise ValueError(f"App csp: unknown key {key!r} (known: {', '.join(CSP_KEYS)})")
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"App csp {key!r} must be a list of origins")
        for name in self.permissions:
            if name not in PERMISSIONS:
                raise ValueError(
                    f"App permissions: unknown {name!r} (known: {', '.join(PERMISSIONS)})"
                )
        for who in self.visibility or ():
            if who not in VISIBILITY:
                raise ValueError(f"App visibility: unknown {who!r} (known: model, app)")

    def tool_meta(self) -> dict[str, Any]:
        """The tool's ``_meta.ui``."""
        ui: dict[str, Any] = {"resourceUri": self.uri}
        if self.visibility is not None:
            ui["visibility"] = list(self.visibility)
        return ui

    def resource_meta(self) -> dict[str, Any]:
        """The view resource's ``_meta.ui`` (only what was asked for)."""
        ui: dict[str, Any] = {}
        if self.csp:
            ui["csp"] = {key: list(value) for key, value in self.csp.items()}
        if self.permissions:
            ui["permissions"] = {name: {} for name in self.permissions}
        if self.domain is not None:
            ui["domain"] = self.domain
        if self.prefers_border is not None:
            ui["prefersBorder"] = self.prefers_border
        return ui

    def read(self) -> str:
        """The view's HTML, now (a file is read each time)."""
        if self.html is not None:
            return self.html
        assert self.path is not None
        return Path(self.path).read_text("utf-8")


def with_app_meta(meta: Mapping[str, Any] | None, app: App) -> dict[str, Any]:
    """A tool's ``meta`` with ``ui`` filled from ``app`` (the author's own ``ui`` members
    win, and a ``resourceUri`` of their own must be the app's)."""
    out = dict(meta or {})
    own = out.get("ui")
    if own is not None and not isinstance(own, Mapping):
        raise ValueError("meta['ui'] must be an object when app= is given")
    if own and own.get("resourceUri", app.uri) != app.uri:
        raise ValueError("meta['ui']['resourceUri'] differs from the app's uri")
    out["ui"] = {**app.tool_meta(), **(own or {})}
    return out


def register_view(server: Server, app: App) -> None:
    """The app's ``ui://`` resource and the extension entry, once per URI; a second,
    different ``App`` at the same URI is an error."""
    known = server.app_views.get(app.uri)
    if known is not None:
        if known != app:
            raise ValueError(f"another App is already registered at {app.uri}")
        return
    server.app_views[app.uri] = app
    server.extensions.setdefault(UI_EXTENSION, {})
    ui = app.resource_meta()
    name = app.uri.rstrip("/").rsplit("/", 1)[-1]
    server.resource(
        app.uri, name=name, mime_type=APP_MIME_TYPE, listed=False, meta={"ui": ui} if ui else None
    )(app.read)
