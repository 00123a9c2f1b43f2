"""Names that carry the server they belong to, and how to take them apart again.

Two conventions, both pure string functions so every role can share them:

* **Tool and prompt names for a view over several servers** (the host's tool list, the
  client's :meth:`~mcpkit.client.Client.from_config`): ``server__tool``.  Model APIs accept
  names matching ``^[A-Za-z0-9_-]{1,64}$`` while MCP names may contain ``.``; other
  characters become ``_`` and an over-long or clashing result gets a short hash, so every
  exposed name maps back to exactly one (server, name) pair and two servers may both have
  an ``add``.  The mapping back is a lookup in the index the view built, not a parse.
* **Resource URIs under a namespace** (server mounts, the client's multi-server view): the
  URI keeps its scheme and gains the namespace as the first segment after it:
  ``data://config`` becomes ``data://x/config``, ``file:///etc/hosts`` becomes
  ``file://x//etc/hosts`` and an opaque ``urn:isbn:1`` becomes ``urn:x/isbn:1``.  That one
  is reversible by itself (strip the segment), so a read is routed by the URI alone, also
  for templates (``data://x/items/{id}``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

__all__ = ["SEPARATOR", "exposed_name", "namespace_uri", "strip_uri"]

#: Between a server's name and its tool's (or prompt's) name.
SEPARATOR = "__"
_SAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(//)?")


def exposed_name(server: str, name: str, taken: Container[str] = frozenset()) -> str:
    """The name ``server``'s tool (or prompt) ``name`` gets in a multi-server view (unique
    among ``taken``)."""
    base = _SAFE.sub("_", f"{server}{SEPARATOR}{name}")
    if len(base) <= _MAX_NAME and base not in taken:
        return base
    digest = hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:8]
    return f"{base[: _MAX_NAME - 9]}_{digest}"


def namespace_uri(namespace: str, uri: str) -> str:
    """``data://config`` -> ``data://{namespace}/config`` (see the module docstring)."""
    match = _SCHEME.match(uri)
    if match is None:
        return f"{namespace}/{uri}"
    head = match.group(0)
    return f"{head}{namespace}/{uri[len(head) :]}"


def strip_uri(namespace: str, uri: str) -> str | None:
    """The inverse of :func:`namespace_uri`; None when ``uri`` is not in ``namespace``."""
    match = _SCHEME.match(uri)
    head = match.group(0) if match is not None else ""
    rest = uri[len(head) :]
    if not rest.startswith(namespace + "/"):
        return None
    return head + rest[len(namespace) + 1 :]
