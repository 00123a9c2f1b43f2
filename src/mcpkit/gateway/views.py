"""Virtual servers: what a ``[[server]]`` endpoint shows and lets through.

A virtual server is the same gateway seen through an allow-list: its lists keep only the
tools, prompts, resources and templates its patterns name, and a call to anything else is
answered as if nothing served that name (-32602), so the endpoint looks like a server
that has exactly those things.  The rules, limits and scopes of the gateway still apply
on top.  The endpoint is chosen by the request's path (see :mod:`.app`); the principal
carries its name to the dispatcher.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from .config import VirtualServer

_BY_METHOD = {"tools/call": "tools", "prompts/get": "prompts", "resources/read": "resources"}


def _named(patterns: tuple[str, ...], value: object) -> bool:
    return isinstance(value, str) and any(fnmatchcase(value, p) for p in patterns)


def allows(view: VirtualServer, method: str, params: dict[str, Any]) -> bool:
    """Whether a request may pass through ``view`` (lists are filtered instead)."""
    kind = _BY_METHOD.get(method)
    if kind == "resources":
        return _named(view.resources, params.get("uri"))
    if kind is not None:
        return _named(getattr(view, kind), params.get("name"))
    if method == "completion/complete":
        ref = params.get("ref") or {}
        if ref.get("type") == "ref/prompt":
            return _named(view.prompts, ref.get("name"))
        return _named(view.resources, ref.get("uri"))
    return True  # discovery, lists, tasks of calls it let through, subscriptions


def keep(view: VirtualServer, kind: str, item: dict[str, Any]) -> bool:
    """Whether a list item (``kind``: tools, prompts, resources, templates) is shown."""
    if kind == "templates":
        return _named(view.resources, item.get("uriTemplate"))
    if kind == "resources":
        return _named(view.resources, item.get("uri"))
    return _named(getattr(view, kind), item.get("name"))
