"""Which upstream serves a resource URI (reads, completions, subscriptions), and what
the front knows of an upstream's tool.

Pure questions about the upstreams' listings, kept out of :mod:`.server` so the gateway's
request routing there stays about policy and forwarding.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..protocol.headers import InvalidHeaderAnnotation, header_params
from ..server.uritemplate import TemplateError, UriTemplate
from ..types.errors import INVALID_PARAMS, LEGACY_RESOURCE_NOT_FOUND, McpError
from .replicas import AnyUpstream

__all__ = ["ProxyTool", "resource_owner"]

log = logging.getLogger("mcpkit.gateway")


class ProxyTool:
    """What the HTTP transport needs of a tool: its ``Mcp-Param-*`` parameters, and
    that it is not ``inline`` (a forwarded call always waits on the upstream)."""

    __slots__ = ("header_params", "wire")

    #: Never run without a cancel scope: the forwarded call awaits the network.
    inline = False

    def __init__(self, wire: dict[str, Any]) -> None:
        self.wire = wire
        try:
            schema = wire.get("inputSchema")
            self.header_params = header_params(schema) if isinstance(schema, dict) else ()
        except InvalidHeaderAnnotation:
            self.header_params = ()


async def resource_owner(
    upstreams: Sequence[AnyUpstream], uri: str, era: str = "modern"
) -> AnyUpstream:
    """The upstream serving ``uri``: one listing it, else one whose template is ``uri``
    (a completion reference names the template itself), else one whose template
    matches it.  An upstream that cannot list is passed over, not fatal."""
    live = [u for u in upstreams if u.client is not None]

    async def listing(upstream: AnyUpstream, kind: str) -> list[dict[str, Any]]:
        try:
            return await upstream.listing(kind)
        except McpError as exc:
            log.warning("upstream %s: listing %s failed: %s", upstream.name, kind, exc)
            return []

    for upstream in live:
        if any(r.get("uri") == uri for r in await listing(upstream, "resources")):
            return upstream
    templates = [(u, t) for u in live for t in await listing(u, "templates")]
    for upstream, template in templates:
        if template.get("uriTemplate") == uri:
            return upstream
    for upstream, template in templates:
        try:
            compiled = UriTemplate.compile(str(template.get("uriTemplate", "")))
        except TemplateError:
            continue
        if compiled.match(uri) is not None:
            return upstream
    # -32602 since 2026-07-28; legacy clients know "resource not found" as -32002.
    code = INVALID_PARAMS if era == "modern" else LEGACY_RESOURCE_NOT_FOUND
    raise McpError(code, f"Resource not found: {uri}", {"uri": uri})

