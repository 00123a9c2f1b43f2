"""How a parent with mounts answers (see :mod:`.mount` for the rules): the wrapped
list, call, read, get, complete and task handlers, and the routing they share (by
prefix, by the child listing a name, by the child serving a ``keep_uris`` URI).

Split out of :mod:`.mount`, which keeps the mount records and their lifecycle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..protocol.naming import strip_uri
from . import handlers as _handlers
from . import uri_owners
from .mount import (
    _LISTS,
    TASK_SEPARATOR,
    Handler,
    Mount,
    NameClash,
    _all_pages,
    _forward,
    _ordered,
)
from .uri_owners import view_of
from .uritemplate import TemplateError, UriTemplate

if TYPE_CHECKING:
    from .context import Context
    from .server import Server

__all__ = ["check_names", "layer", "owner_of", "view_of"]

log = logging.getLogger("mcpkit.server")


async def _child_list(entry: Mount, method: str, ctx: Context | None) -> list[dict[str, Any]]:
    """Every item of one of the child's lists (as the caller of ``ctx`` sees it; without
    a request, as the parent itself)."""
    member, _ = _LISTS[method]
    kind = "resources" if member == "resourceTemplates" else member
    if not entry.child.answers_for(kind):
        return []

    async def ask(params: dict[str, Any]) -> dict[str, Any]:
        if ctx is None:
            return await entry.child.call(method, params)
        return await _forward(entry, ctx, params, method)

    try:
        items, _ = await _all_pages(ask, {}, member)
    except Exception as exc:  # (an upstream that cannot list is passed over)
        log.warning("mounted %s: %s failed: %s", entry.namespace, method, exc)
        return []
    return [i for i in items if isinstance(i, dict)]


async def _by_prefix(
    parent: Server, ctx: Context, name: str, kind: str, *, check: bool = True
) -> Mount | None:
    """The child a front tool or prompt ``name`` goes to: the one whose prefix fits (the
    longest, the most recent); among several (a shared ``""`` prefix) the one listing
    it.  ``check``: only children offering ``kind`` at all."""
    fits = [
        e
        for e in _ordered(parent)
        if e.inner_name(name) is not None and (not check or e.child.answers_for(kind))
    ]
    if len(fits) > 1:
        method = f"{kind}/list"
        for entry in fits:
            inner = entry.inner_name(name)
            if any(i.get("name") == inner for i in await _child_list(entry, method, ctx)):
                return entry
    return fits[0] if fits else None


async def owner_of(parent: Server, uri: str) -> Mount | None:
    """The ``keep_uris`` child of ``parent`` serving ``uri`` (asked as the parent)."""
    return await _owner([m for m in _ordered(parent) if m.keep_uris], None, uri)


async def _owner(entries: list[Mount], ctx: Context | None, uri: str) -> Mount | None:
    """The ``keep_uris`` child serving ``uri``: its first owner (:mod:`.uri_owners`);
    else, in mount order, the first that lists it, else has that template (a completion
    names the template itself), else has a template matching it.  A ``ui://`` view only
    from a child whose tool names it."""
    if not entries:
        return None
    parent = entries[0].parent
    owners = await uri_owners.ready(parent)
    order = {id(m): i for i, m in enumerate(parent.mounts)}
    entries = sorted(entries, key=lambda m: order.get(id(m), len(order)))
    if uri.startswith("ui://"):
        return await _view_owner(owners, entries, ctx, uri)
    recorded = owners.uris.get(uri)
    if recorded is not None:
        return next((e for e in entries if e.namespace == recorded), None)
    for entry in entries:
        listed = await _child_list(entry, "resources/list", ctx)
        if any(r.get("uri") == uri for r in listed) and owners.claim_uri(uri, entry.namespace):
            return entry
    found = [
        (entry, str(t.get("uriTemplate", "")))
        for entry in entries
        for t in await _child_list(entry, "resources/templates/list", ctx)
        if owners.allows(entry.namespace, str(t.get("uriTemplate", "")), template=True)
    ]
    for entry, text in found:
        if text == uri:
            return entry
    for entry, text in found:
        try:
            if UriTemplate.compile(text).match(uri) is not None:
                return entry
        except TemplateError:
            continue
    return None


async def _view_owner(
    owners: uri_owners.UriOwners, entries: list[Mount], ctx: Context | None, uri: str
) -> Mount | None:
    """The child whose tool names the view ``uri`` (an MCP App's view need not be
    listed), the first to offer it keeping it."""
    recorded = owners.uris.get(uri)
    for entry in entries:
        if recorded is not None and entry.namespace != recorded:
            continue
        tools = await _child_list(entry, "tools/list", ctx)
        if any(view_of(t) == uri for t in tools) and owners.claim_uri(uri, entry.namespace):
            return entry
    return None


async def _route_uri(parent: Server, ctx: Context, uri: str) -> tuple[Mount, str] | None:
    """The child a front URI belongs to, and its own URI for it."""
    kept = []
    for entry in _ordered(parent):
        if entry.keep_uris:
            kept.append(entry)
            continue
        inner = strip_uri(entry.namespace, uri)
        if inner is not None:
            return entry, inner
    owner = await _owner(kept, ctx, uri) if kept else None
    return (owner, uri) if owner is not None else None


async def check_names(parent: Server) -> None:
    """Refuse (:class:`NameClash`, naming both owners) when two mounted children, or a
    child and ``parent`` itself, offer the same front name: a tool or prompt name, a
    resource URI or template.  A child that cannot list is passed over."""
    for method in _LISTS:
        member, key = _LISTS[method]
        label = {"resourceTemplates": "resource template"}.get(member, member[:-1])
        owners: dict[str, str] = {}
        for name in _own_names(parent, method):
            owners.setdefault(name, f"{parent.name!r} itself")
        for entry in parent.mounts:
            for item in await _child_list(entry, method, None):
                name = str(item.get(key, ""))
                front = entry.prefix + name if key == "name" else entry.front_uri(name)
                owner = f"{getattr(entry.child, 'role', 'mount')} {entry.namespace!r}"
                other = owners.setdefault(front, owner)
                if other != owner:
                    raise NameClash(
                        f"{label} {front!r} is offered by both {other} and {owner}; "
                        "give one of them a prefix (or a different one)"
                    )


def _own_names(parent: Server, method: str) -> list[str]:
    """The front names of the parent's own registrations for one list method."""
    if method == "tools/list":
        return list(parent.tools)
    if method == "prompts/list":
        return list(parent.prompts)
    if method == "resources/list":
        return list(parent.resources)
    return [str(t.wire.get("uriTemplate", "")) for t in parent.templates]


def layer(parent: Server, own: dict[str, Handler]) -> dict[str, Handler]:
    """The mount-aware handlers around ``own``; they consult ``parent.mounts`` per
    request (see :mod:`.layers` for the order of layers)."""

    def lister(method: str) -> Handler:
        member, key = _LISTS[method]
        original = own[method]

        async def handler(ctx: Context) -> dict[str, Any]:
            base = dict(ctx.params)

            async def mine(params: dict[str, Any]) -> dict[str, Any]:
                ctx.params = params
                return await original(ctx)

            items, _ = await _all_pages(mine, base, member)
            ttl = parent.cache_ttl_ms
            scope = parent.cache_scope
            kept = key != "name" and any(m.keep_uris for m in parent.mounts)
            owners = await uri_owners.ready(parent) if kept else None
            template = key == "uriTemplate"
            for entry in parent.mounts:
                kind = "resources" if member == "resourceTemplates" else member
                if not entry.child.answers_for(kind):
                    continue
                theirs, last = await _all_pages(partial(_forward, entry, ctx), base, member)
                if isinstance(last.get("ttlMs"), int):
                    ttl = min(ttl, last["ttlMs"])
                if last.get("cacheScope") == "private":
                    scope = "private"
                for item in theirs:
                    if not isinstance(item, dict) or not isinstance(item.get(key), str):
                        continue
                    if (
                        owners is not None
                        and entry.keep_uris
                        and not owners.allows(entry.namespace, item[key], template=template)
                    ):
                        continue  # another child's URI: refused (see .uri_owners)
                    renamed = (
                        entry.prefix + item[key] if key == "name" else entry.front_uri(item[key])
                    )
                    items.append({**item, key: renamed})
            ctx.params = base
            result = _handlers._page(parent, ctx, member, items)
            if "ttlMs" in result:
                result["ttlMs"], result["cacheScope"] = ttl, scope
            return result

        return handler

    def by_name(method: str, registry: Callable[[], dict[str, Any]]) -> Handler:
        original = own[method]
        kind = method.partition("/")[0]

        async def handler(ctx: Context) -> dict[str, Any]:
            name = ctx.params.get("name")
            if isinstance(name, str) and name not in registry():
                entry = await _by_prefix(parent, ctx, name, kind)
                if entry is not None:
                    inner = entry.inner_name(name)
                    return await _forward(entry, ctx, {**ctx.params, "name": inner})
            return await original(ctx)

        return handler

    read_original = own["resources/read"]

    def own_uri(uri: str) -> bool:
        return uri in parent.resources or any(
            t.template.match(uri) is not None for t in parent.templates
        )

    async def read(ctx: Context) -> dict[str, Any]:
        uri = ctx.params.get("uri")
        if isinstance(uri, str) and not own_uri(uri):
            found = await _route_uri(parent, ctx, uri)
            if found is not None and found[0].child.answers_for("resources"):
                entry, inner = found
                result = await _forward(entry, ctx, {**ctx.params, "uri": inner})
                return _rename_contents(entry, result)
        return await read_original(ctx)

    complete_original = own["completion/complete"]

    async def complete(ctx: Context) -> dict[str, Any]:
        ref = ctx.params.get("ref")
        found: tuple[Mount, dict[str, Any]] | None = None
        if isinstance(ref, dict) and ref.get("type") == "ref/prompt":
            name = ref.get("name")
            if isinstance(name, str) and name not in parent.prompts:
                entry = await _by_prefix(parent, ctx, name, "prompts", check=False)
                if entry is not None:
                    found = entry, {**ref, "name": entry.inner_name(name)}
        elif isinstance(ref, dict) and ref.get("type") == "ref/resource":
            uri = ref.get("uri")
            if isinstance(uri, str) and not (
                own_uri(uri) or any(t.wire["uriTemplate"] == uri for t in parent.templates)
            ):
                routed = await _route_uri(parent, ctx, uri)
                if routed is not None:
                    found = routed[0], {**ref, "uri": routed[1]}
        if found is None:
            return await complete_original(ctx)
        entry, renamed = found
        if not entry.child.answers_for("completions"):
            return {"completion": {"values": [], "total": 0, "hasMore": False}}
        return await _forward(entry, ctx, {**ctx.params, "ref": renamed})

    wrapped: dict[str, Handler] = {m: lister(m) for m in _LISTS}
    wrapped["tools/call"] = by_name("tools/call", lambda: parent.tools)
    wrapped["prompts/get"] = by_name("prompts/get", lambda: parent.prompts)
    wrapped["resources/read"] = read
    wrapped["completion/complete"] = complete

    def task_method(method: str) -> Handler:
        original = own[method]

        async def handler(ctx: Context) -> dict[str, Any]:
            task_id = ctx.params.get("taskId")
            if isinstance(task_id, str) and TASK_SEPARATOR in task_id:
                namespace, _, inner = task_id.partition(TASK_SEPARATOR)
                entry = next((m for m in parent.mounts if m.namespace == namespace), None)
                if entry is not None:
                    return await _forward(entry, ctx, {**ctx.params, "taskId": inner})
            return await original(ctx)

        return handler

    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        if method in own:
            wrapped[method] = task_method(method)
    return wrapped


def _rename_contents(entry: Mount, result: dict[str, Any]) -> dict[str, Any]:
    """The contents of a read carry the URI the client asked for."""
    contents = result.get("contents")
    if isinstance(contents, list):
        result = {
            **result,
            "contents": [
                {**c, "uri": entry.front_uri(c["uri"])}
                if isinstance(c, dict) and isinstance(c.get("uri"), str)
                else c
                for c in contents
            ],
        }
    return result
