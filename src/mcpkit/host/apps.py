"""MCP Apps (extension ``io.modelcontextprotocol/ui``): what the host needs on its side.

A tool names its view with ``_meta.ui.resourceUri`` (a ``ui://`` resource of type
``text/html;profile=mcp-app``).  The host reads it and shows it in an iframe that:

* lives on a *separate origin* (the sandbox server, :mod:`mcpkit.host.web.sandbox`), inside
  the spec's sandbox proxy, sandboxed with ``allow-scripts`` only (an opaque origin) unless
  the resource names a dedicated ``_meta.ui.domain``;
* gets a Content-Security-Policy built here from the resource's ``_meta.ui.csp``
  (``connectDomains``, ``resourceDomains``, ``frameDomains``, ``baseUriDomains``), sent as an
  HTTP *response header*.  The document itself is never edited: an earlier version put the
  policy in a ``<meta>`` tag found by regular expression, and an untrusted document escaped
  it (``<!-- <head> -->`` swallowed the tag; a ``<script>`` before ``<head>`` ran before the
  policy existed).  A header applies before the first byte is parsed.  Without ``csp`` the
  default is restrictive: inline script and style, ``data:`` images, no network.  Domains are
  validated as origins; anything that could smuggle another directive (``;``, quotes,
  spaces, ``*`` alone, non-http(s) schemes) is dropped.  A ``connectDomains`` entry that
  names this machine or a private network (loopback, RFC 1918, link-local such as the
  cloud metadata address ``169.254.169.254``, ``localhost``; any spelling the browser
  reads as one, ``2852039166`` included) is *withheld* (:attr:`AppDocument.withheld`)
  until the person grants it by name (:meth:`mcpkit.host.Host.read_app` asks).

The view talks JSON-RPC over ``postMessage``; the page's script is the bridge and sends its
``tools/call`` requests back through the host's policy like any other call (see ``web/``).
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import re
import socket
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "APP_MIME_TYPE",
    "APP_PROTOCOL_VERSION",
    "UI_EXTENSION",
    "AppDocument",
    "AppError",
    "build_csp",
    "callable_by_app",
    "client_capabilities",
    "is_private_origin",
    "prepare_app",
    "tool_ui_uri",
    "visible_to_model",
]

log = logging.getLogger("mcpkit.host.apps")

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
APP_PROTOCOL_VERSION = "2026-01-26"

_ORIGIN = re.compile(r"^(https?|wss?)://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:(\d{1,5}|\*))?$")
_PERMISSIONS = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}


class AppError(ValueError):
    """The resource is not a usable MCP App view."""


def client_capabilities() -> dict[str, Any]:
    """What the host declares so servers know it renders apps."""
    return {"extensions": {UI_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}}


def _ui_meta(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = tool.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    return ui if isinstance(ui, Mapping) else {}


def tool_ui_uri(tool: Mapping[str, Any]) -> str | None:
    """The tool's view, from ``_meta.ui.resourceUri`` (or the deprecated flat key)."""
    uri = _ui_meta(tool).get("resourceUri")
    if uri is None:
        meta = tool.get("_meta")
        uri = meta.get("ui/resourceUri") if isinstance(meta, Mapping) else None
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None


def _visibility(tool: Mapping[str, Any]) -> Sequence[Any]:
    raw = _ui_meta(tool).get("visibility")
    return raw if isinstance(raw, list) else ["model", "app"]


def visible_to_model(tool: Mapping[str, Any]) -> bool:
    return "model" in _visibility(tool)


def callable_by_app(tool: Mapping[str, Any]) -> bool:
    return "app" in _visibility(tool)


def _domains(csp: Mapping[str, Any], key: str) -> list[str]:
    raw = csp.get(key)
    if not isinstance(raw, list):
        return []
    good = []
    for item in raw:
        if isinstance(item, str) and _ORIGIN.match(item):
            good.append(item)
        else:
            log.warning("ignoring invalid %s entry in an app's CSP: %r", key, item)
    return good


def is_private_origin(origin: str) -> bool:
    """Whether ``origin`` (a validated CSP source) names this machine or a private or
    link-local network: ``localhost`` names, and any host the browser reads as such an IP
    address (``127.1``, ``0x7f.0.0.1`` and ``2130706433`` are 127.0.0.1 to it)."""
    host = origin.split("://", 1)[-1].rsplit(":", 1)[0].lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(socket.inet_ntoa(socket.inet_aton(host)))
    except (OSError, ValueError):
        return False  # a DNS name: not an address the browser reads by itself
    return not address.is_global


def _connect_domains(ui_meta: Mapping[str, Any] | None) -> list[str]:
    csp = ui_meta.get("csp") if isinstance(ui_meta, Mapping) else None
    return _domains(csp if isinstance(csp, Mapping) else {}, "connectDomains")


def withheld_connect(ui_meta: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The view's ``connectDomains`` that need the person's consent (see the module)."""
    return tuple(d for d in _connect_domains(ui_meta) if is_private_origin(d))


def build_csp(ui_meta: Mapping[str, Any] | None, granted: Collection[str] = ()) -> str:
    """The Content-Security-Policy for a view, from its ``_meta.ui``; a private
    ``connectDomains`` entry is in it only when ``granted`` holds it."""
    csp = ui_meta.get("csp") if isinstance(ui_meta, Mapping) else None
    csp = csp if isinstance(csp, Mapping) else {}
    connect = [
        d for d in _domains(csp, "connectDomains") if d in granted or not is_private_origin(d)
    ]
    resource = _domains(csp, "resourceDomains")
    frames = _domains(csp, "frameDomains")
    base = _domains(csp, "baseUriDomains")

    def src(*items: str) -> str:
        return " ".join(items) if items else "'none'"

    inline = "'unsafe-inline'"
    directives = [
        "default-src 'none'",
        "script-src " + src(inline, *resource),
        "style-src " + src(inline, *resource),
        f"img-src {src('data:', 'blob:', *resource)}",
        f"font-src {src('data:', *resource)}",
        f"media-src {src('data:', 'blob:', *resource)}",
        f"connect-src {src(*connect)}",
        f"frame-src {src(*frames)}",
        f"base-uri {src(*base)}",
        "form-action 'none'",
        "object-src 'none'",
    ]
    return "; ".join(directives)


def _asked(perms: Mapping[str, Any], key: str) -> bool:
    """The spec asks for a permission with an empty object (``"camera": {}``)."""
    return key in perms and perms[key] is not None and perms[key] is not False


def permission_policy(ui_meta: Mapping[str, Any] | None) -> str:
    """The iframe ``allow`` attribute for the permissions the view asked for."""
    perms = ui_meta.get("permissions") if isinstance(ui_meta, Mapping) else None
    if not isinstance(perms, Mapping):
        return ""
    return "; ".join(feature for key, feature in _PERMISSIONS.items() if _asked(perms, key))


def sandbox_capability(
    ui_meta: Mapping[str, Any] | None, granted_private: Collection[str] = ()
) -> dict[str, Any]:
    """``hostCapabilities.sandbox`` for ``ui/initialize``: what this host actually granted
    (the valid CSP domains, the permissions it delegates), so a view need not guess."""
    csp = ui_meta.get("csp") if isinstance(ui_meta, Mapping) else None
    csp = csp if isinstance(csp, Mapping) else {}
    granted = {
        key: _domains(csp, key)
        for key in ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
    }
    granted["connectDomains"] = [
        d for d in granted["connectDomains"] if d in granted_private or not is_private_origin(d)
    ]
    perms = ui_meta.get("permissions") if isinstance(ui_meta, Mapping) else None
    perms = perms if isinstance(perms, Mapping) else {}
    return {
        "csp": {k: v for k, v in granted.items() if v},
        "permissions": {key: {} for key in _PERMISSIONS if _asked(perms, key)},
    }


@dataclass(frozen=True)
class AppDocument:
    """A view as the server sent it, with the policy to serve it under.

    ``html`` is the server's document byte for byte; ``csp`` goes into the
    ``Content-Security-Policy`` response header that delivers it."""

    uri: str
    html: str
    csp: str
    allow: str = ""
    prefers_border: bool = True
    #: ``_meta.ui.domain``: the view asks for a dedicated, stable origin (see the sandbox).
    domain: str | None = None
    #: ``hostCapabilities.sandbox`` (see :func:`sandbox_capability`).
    sandbox: dict[str, Any] = field(default_factory=dict)
    #: Private ``connectDomains`` the view asked for and was not granted (yet).
    withheld: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The view's description as the host page receives it."""
        return {
            "uri": self.uri,
            "csp": self.csp,
            "allow": self.allow,
            "prefersBorder": self.prefers_border,
            "domain": self.domain,
            "sandbox": self.sandbox,
        }


def prepare_app(
    uri: str, read_result: Mapping[str, Any], granted: Collection[str] = ()
) -> AppDocument:
    """Turn a ``resources/read`` result for a ``ui://`` URI into a sandboxable document;
    the private ``connectDomains`` in ``granted`` are allowed, the others withheld."""
    if not uri.startswith("ui://"):
        raise AppError(f"{uri!r} is not a ui:// resource")
    contents = read_result.get("contents")
    items = [c for c in contents if isinstance(c, Mapping)] if isinstance(contents, list) else []
    item = next((c for c in items if c.get("uri") == uri), items[0] if items else None)
    if item is None:
        raise AppError(f"{uri}: the server returned no contents")
    mime = str(item.get("mimeType") or "").replace(" ", "").lower()
    if mime != APP_MIME_TYPE:
        raise AppError(f"{uri}: mimeType {item.get('mimeType')!r} is not {APP_MIME_TYPE!r}")
    if isinstance(item.get("text"), str):
        html = item["text"]
    elif isinstance(item.get("blob"), str):
        try:
            html = base64.b64decode(item["blob"]).decode("utf-8")
        except (ValueError, UnicodeDecodeError) as exc:
            raise AppError(f"{uri}: the blob is not UTF-8 HTML ({exc})") from None
    else:
        raise AppError(f"{uri}: contents have neither text nor blob")
    meta = item.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    ui = ui if isinstance(ui, Mapping) else {}
    domain = ui.get("domain")
    return AppDocument(
        uri=uri,
        html=html,
        csp=build_csp(ui, granted),
        allow=permission_policy(ui),
        prefers_border=ui.get("prefersBorder") is not False,
        sandbox=sandbox_capability(ui, granted),
        withheld=tuple(d for d in withheld_connect(ui) if d not in granted),
        domain=domain if isinstance(domain, str) and domain.strip() else None,
    )
