"""The order of the layers composition puts between a server's middleware and its own
handlers: ``middleware -> tool search -> tool transforms -> mounts -> own handlers``.

Transforms sit outside mounts so that a transform reshapes a mounted (or proxied) tool as
well as an own one; both sit inside the middleware, so middleware sees what clients see
(the transformed, namespaced names).  Tool search is outermost: it searches every tool
the layers below offer, under the names clients see.  The table is rebuilt whenever a
layer appears or goes, from the handlers the server had before any layer (never wrapping
a wrapper)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from .middleware import build_chains

if TYPE_CHECKING:
    from .server import Server

__all__ = ["rebuild"]

#: Each server's handlers before any composition layer.
_base: weakref.WeakKeyDictionary[Server, dict[str, Any]] = weakref.WeakKeyDictionary()


def rebuild(server: Server) -> None:
    base = _base.get(server)
    if base is None:
        base = _base[server] = dict(server._handlers)
    table = dict(base)
    if server.mounts:
        from .mount import layer

        table.update(layer(server, table))
    if server.tool_transforms:
        from .transform import layer as transform_layer

        table.update(transform_layer(server, table))
    if server.tool_search is not None:
        from .search import layer as search_layer

        table.update(search_layer(server, table))
    server._handlers = table
    server._chains = build_chains(table, server.middleware)
