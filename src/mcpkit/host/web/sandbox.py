"""The sandbox origin: MCP App views are served from a second loopback port, never the page's.

The MCP Apps spec asks a web host to wrap every view in a *sandbox proxy* on an origin other
than the host page's.  Here that is a second small Starlette app on its own port of
127.0.0.1 (``--sandbox-port``), which serves two things:

``/proxy?origin=<page origin>``
    The proxy page.  The host page frames it (``sandbox="allow-scripts allow-same-origin"``,
    as the spec requires); it announces ``ui/notifications/sandbox-proxy-ready``, is sent
    ``ui/notifications/sandbox-resource-ready`` with the view's URL, creates the inner
    iframe and relays JSON-RPC both ways, dropping ``ui/notifications/sandbox-*`` from
    either side.  It only talks to its parent at the page's origin and to its own child.
    Its own CSP restricts ``frame-src`` to ``/view/`` URLs of this server, so even a view
    that navigates itself (``location = ...``, ``<meta http-equiv=refresh>``) cannot leave.

``/view/<id>``
    The view's document, *exactly as the server sent it*, with the policy in HTTP response
    headers: the CSP built from ``_meta.ui.csp`` (see :func:`mcpkit.host.apps.build_csp`),
    ``frame-ancestors`` naming the page and the proxy, and a CSP ``sandbox`` directive, so
    the document is sandboxed even if it were opened on its own.  A header cannot be
    escaped by markup, unlike the ``<meta>`` tag it replaces.  The id is an unguessable
    capability (the page holds it; an iframe cannot send the page's bearer token), good
    for one load within :data:`VIEW_TTL` seconds.

``_meta.ui.domain``: a view that asks for a dedicated origin gets
``http://<h>.localhost:<sandbox port>``, where ``<h>`` is the first 16 hex digits of
SHA-256 over the server's name, a NUL and the domain string, and is framed with
``allow-scripts allow-same-origin`` so it really has that origin (its ``Origin`` header,
its storage).  Browsers resolve ``*.localhost`` to loopback themselves.  The origin is
stable for a given server name and domain as long as the sandbox port is (fix it with
``--sandbox-port``); two servers can never share one, because the name is in the hash.
Views without a domain stay opaque-origin (``allow-scripts`` only).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..apps import AppDocument

__all__ = ["VIEW_TTL", "Sandbox", "domain_label"]

#: Seconds a published view waits for its iframe to load it.
VIEW_TTL = 120.0
_ID = re.compile(r"^[A-Za-z0-9_-]{20,64}$")

_PROXY_SCRIPT = """
"use strict";
const HOST = document.documentElement.dataset.host;
const SANDBOX_MSG = "ui/notifications/sandbox-";
let inner = null, innerOrigin = "*";
const isSandboxMsg = (m) => typeof m.method === "string" && m.method.startsWith(SANDBOX_MSG);
function load(p) {
  if (inner) return;
  let src;
  try { src = new URL(String(p.src || ""), location.href); } catch (e) { return; }
  const own = src.origin === location.origin;
  const dedicated = /^[0-9a-f]{16}\\.localhost$/.test(src.hostname) && src.port === location.port
                    && src.protocol === "http:";
  if (!/^\\/view\\/[A-Za-z0-9_-]+$/.test(src.pathname) || !(own || dedicated)) return;
  inner = document.createElement("iframe");
  inner.setAttribute("sandbox", dedicated ? "allow-scripts allow-same-origin" : "allow-scripts");
  if (typeof p.allow === "string" && p.allow) inner.setAttribute("allow", p.allow);
  inner.setAttribute("title", "app view");
  innerOrigin = dedicated ? src.origin : "*";
  inner.src = src.href;
  document.body.append(inner);
}
window.addEventListener("message", (ev) => {
  const msg = ev.data;
  if (!msg || typeof msg !== "object" || msg.jsonrpc !== "2.0") return;
  if (ev.source === window.parent && ev.origin === HOST) {
    if (msg.method === SANDBOX_MSG + "resource-ready") load(msg.params || {});
    else if (!isSandboxMsg(msg) && inner) inner.contentWindow.postMessage(msg, innerOrigin);
  } else if (inner && ev.source === inner.contentWindow && !isSandboxMsg(msg)) {
    window.parent.postMessage(msg, HOST);
  }
});
window.parent.postMessage({ jsonrpc: "2.0", method: SANDBOX_MSG + "proxy-ready", params: {} },
                          HOST);
"""
_PROXY_HASH = base64.b64encode(hashlib.sha256(_PROXY_SCRIPT.encode()).digest()).decode()
_PROXY_PAGE = (
    '<!doctype html><html data-host="{host}"><head><meta charset="utf-8">'
    "<title>mcpkit app sandbox</title><style>html,body{{margin:0;height:100%;"
    "overflow:hidden}}iframe{{border:0;width:100%;height:100%;display:block}}"
    "</style></head><body><script>"
    + _PROXY_SCRIPT.replace("{", "{{").replace("}", "}}")
    + "</script></body></html>"
)


def domain_label(server: str, domain: str) -> str:
    """The host label of a view's dedicated origin (``<label>.localhost``)."""
    return hashlib.sha256(f"{server}\0{domain}".encode()).hexdigest()[:16]


@dataclass
class _Published:
    doc: AppDocument
    host: str  # the Host header it must be fetched with
    sandbox: str
    expires: float


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Sandbox:
    """The views waiting to be loaded, and the app that serves them and the proxy."""

    def __init__(self) -> None:
        self.port = 0
        #: Origins of the host page (``http://127.0.0.1:<page port>`` and ``localhost``).
        self.page_origins: tuple[str, ...] = ()
        self._views: dict[str, _Published] = {}

    def bind(self, port: int, page_origins: tuple[str, ...]) -> None:
        self.port = port
        self.page_origins = page_origins

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def proxy_url(self, page_origin: str) -> str:
        return f"{self.origin}/proxy?origin={page_origin}"

    def publish(self, server: str, doc: AppDocument) -> dict[str, Any]:
        """Hold ``doc`` for one load; returns what the page sends the proxy."""
        now = time.monotonic()
        self._views = {k: v for k, v in self._views.items() if v.expires > now}
        view_id = secrets.token_urlsafe(24)
        if doc.domain is not None:
            host = f"{domain_label(server, doc.domain)}.localhost:{self.port}"
            sandbox = "allow-scripts allow-same-origin"
        else:
            host, sandbox = f"127.0.0.1:{self.port}", "allow-scripts"
        self._views[view_id] = _Published(doc, host, sandbox, now + VIEW_TTL)
        return {"src": f"http://{host}/view/{view_id}", "sandbox": sandbox, "allow": doc.allow}

    def _own_host(self, request: Request) -> bool:
        host = request.headers.get("host", "")
        name, _, port = host.rpartition(":")
        if port != str(self.port):
            return False
        return name in ("127.0.0.1", "localhost") or bool(
            re.fullmatch(r"[0-9a-f]{16}\.localhost", name)
        )

    def app(self) -> Starlette:
        async def proxy(request: Request) -> Response:
            if not self._own_host(request):
                return _error(403, "unexpected Host header")
            origin = request.query_params.get("origin", "")
            if origin not in self.page_origins:
                return _error(403, "the proxy serves only this host's page")
            csp = "; ".join(
                [
                    "default-src 'none'",
                    f"script-src 'sha256-{_PROXY_HASH}'",
                    "style-src 'unsafe-inline'",
                    f"frame-src {self.origin}/view/ http://*.localhost:{self.port}/view/",
                    f"frame-ancestors {origin}",
                    "base-uri 'none'",
                    "form-action 'none'",
                    "object-src 'none'",
                ]
            )
            return HTMLResponse(
                _PROXY_PAGE.format(host=origin),
                headers={
                    "Content-Security-Policy": csp,
                    "Cache-Control": "no-store",
                    "Referrer-Policy": "no-referrer",
                    "X-Content-Type-Options": "nosniff",
                },
            )

        async def view(request: Request) -> Response:
            view_id = request.path_params["view_id"]
            published = self._views.get(view_id) if _ID.match(view_id) else None
            if published is None or published.expires < time.monotonic():
                return _error(404, "no such view (each view URL loads once)")
            if request.headers.get("host") != published.host:
                return _error(403, "this view belongs to another origin")
            del self._views[view_id]
            ancestors = " ".join([*self.page_origins, self.origin])
            csp = f"{published.doc.csp}; frame-ancestors {ancestors}; sandbox {published.sandbox}"
            return HTMLResponse(
                published.doc.html,
                headers={
                    "Content-Security-Policy": csp,
                    "Cache-Control": "no-store",
                    "Referrer-Policy": "no-referrer",
                    "X-Content-Type-Options": "nosniff",
                    "Cross-Origin-Resource-Policy": "same-origin",
                },
            )

        return Starlette(routes=[Route("/proxy", proxy), Route("/view/{view_id}", view)])
