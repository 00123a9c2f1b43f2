"""Which upstream serves a name (the App names of :mod:`.middleware`, guardrails' tool
lookups), and what the front knows of an upstream's tool.  (Requests are routed by the
mounts of :class:`.server.Upstreams`.)

Pure questions about the upstreams' listings, kept out of :mod:`.server` so the gateway's
request routing there stays about policy and forwarding.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..compose.replicas import AnyUpstream
from ..protocol.headers import InvalidHeaderAnnotation, header_params
from ..server.mount_routes import view_of
from ..types.errors import McpError

__all__ = [
    "ProxyTool",
    "app_owners",
    "name_owner",
]

log = logging.getLogger("mcpkit.gateway")


class ProxyTool:
    """What the transports need of a tool: its ``Mcp-Param-*`` parameters."""

    __slots__ = ("header_params", "wire")

    def __init__(self, wire: dict[str, Any]) -> None:
        self.wire = wire
        try:
            schema = wire.get("inputSchema")
            self.header_params = header_params(schema) if isinstance(schema, dict) else ()
        except InvalidHeaderAnnotation:
            self.header_params = ()


async def _listing(upstream: AnyUpstream, kind: str) -> list[dict[str, Any]]:
    try:
        return await upstream.listing(kind)
    except McpError as exc:
        log.warning("upstream %s: listing %s failed: %s", upstream.name, kind, exc)
        return []


async def name_owner(
    upstreams: Sequence[AnyUpstream], name: str, kind: str = "tools"
) -> tuple[AnyUpstream, str] | None:
    """The upstream serving the tool (``kind="prompts"``: prompt) the front calls
    ``name``, and its own name for it.  One upstream whose prefix fits is taken as it is
    (no listing needed: the usual case, and the fast lane's); among several (``prefix =
    ""`` on more than one upstream, or one prefix starting another) the one that lists
    it, else the longest prefix."""
    if len(upstreams) == 1:  # (every call of a one-upstream gateway: no sort, no list)
        only = upstreams[0]
        return (only, name[len(only.prefix) :]) if name.startswith(only.prefix) else None
    fits = sorted((u for u in upstreams if name.startswith(u.prefix)), key=lambda u: -len(u.prefix))
    if not fits:
        return None
    if len(fits) > 1:
        for upstream in fits:
            inner = name[len(upstream.prefix) :]
            if upstream.client is not None and any(
                item.get("name") == inner for item in await _listing(upstream, kind)
            ):
                return upstream, inner
    return fits[0], name[len(fits[0].prefix) :]


def _serves_apps(tools: list[dict[str, Any]], resources: list[dict[str, Any]]) -> bool:
    """An upstream with an MCP App: a ``ui://`` resource, or a tool naming one as its
    view (a view need not be listed)."""
    if any(str(r.get("uri", "")).startswith("ui://") for r in resources):
        return True
    return any(view_of(t) is not None for t in tools)


async def app_owners(upstreams: Sequence[AnyUpstream], name: str) -> list[AnyUpstream]:
    """The upstreams whose MCP App may be calling its own tool ``name`` by the name it
    has there (an App knows nothing of the gateway's prefixes, and the host passes its
    ``tools/call`` on as it is): upstreams that serve an App and have that tool."""
    found = []
    for upstream in upstreams:
        if upstream.client is None or not upstream.prefix:
            continue  # (without a prefix the App's name already is the front name)
        tools = await _listing(upstream, "tools")
        if not any(t.get("name") == name for t in tools):
            continue
        if _serves_apps(tools, await _listing(upstream, "resources")):
            found.append(upstream)
    return found
