"""Live in-process mounts: ``parent.mount(child, namespace="x")``.

A mount is a routing rule, not a copy.  Nothing of the child is registered on the parent:
the parent's handlers for the list, call, read, get and complete methods are wrapped once
(at the first mount) so that each request is answered from the parent's own registrations
or handed, renamed, to the child's :meth:`~mcpkit.server.Server.dispatch`.  That gives,
without special cases:

* live lists: a child's tool added or removed after mounting shows at once, and its
  change notifications are republished on the parent's bus (namespaced);
* both middleware chains: the parent's runs around the wrapped handler (it sees the
  namespaced name), the child's inside its own dispatch (it sees its own name);
* input on both eras: the child's ``InputRequiredResult`` (sealed with the child's keys)
  passes through unchanged, and the retry reaches the child with its ``requestState``;
  a legacy child asks the client through the same exchange;
* nesting: a child may itself have mounts (``a_b_tool``), and ``unmount`` at run time.

Names.  Tools and prompts become ``{namespace}_{name}``.  Resource URIs keep their scheme
and gain the namespace as the first segment after it: ``data://config`` becomes
``data://x/config``, ``file:///etc/hosts`` becomes ``file://x//etc/hosts`` and an opaque
``urn:isbn:1`` becomes ``urn:x/isbn:1``.  The mapping is reversible (strip the segment),
so a read is routed by the URI alone, also for templates (``data://x/items/{id}``).

Precedence: the parent's own registrations win, then the most recently mounted child
whose namespace matches (the longest namespace first when one is a prefix of another).
A task started by a mounted tool is named ``{namespace}~{id}`` here, and ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` are routed back to the child by that name (task
status notifications on a listen stream are not relayed: poll with ``tasks/get``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.naming import namespace_uri, strip_uri
from ..runtime.changes import RESOURCE_UPDATED, RESOURCES, ChangeEvent
from ..types.versions import META_SERVER_INFO, Era
from . import handlers as _handlers
from .layers import rebuild

if TYPE_CHECKING:
    from .context import Context
    from .server import Server

__all__ = ["Mount", "namespace_uri", "strip_uri"]

log = logging.getLogger("mcpkit.server")
Handler = Callable[["Context"], Awaitable[dict[str, Any]]]
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_LISTS = {
    "tools/list": ("tools", "name"),
    "prompts/list": ("prompts", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
}
_MAX_PAGES = 1000
#: Between a namespace and a mounted child's task id (not in namespaces, not in ids we mint).
TASK_SEPARATOR = "~"
#: Servers whose lifespan already starts their mounted children.
_hooked: weakref.WeakSet[Server] = weakref.WeakSet()


@dataclass(eq=False)
class Mount:
    """One child under one namespace (what :meth:`Server.mount` returns)."""

    parent: Server
    child: Server
    namespace: str
    _relay: Callable[[ChangeEvent], None] | None = field(default=None, repr=False)
    #: Set to end the task that keeps the child running (see :func:`_keep_running`).
    _stop: anyio.Event | None = field(default=None, repr=False)
    _done: anyio.Event | None = field(default=None, repr=False)
    _started: anyio.Event | None = field(default=None, repr=False)

    @property
    def prefix(self) -> str:
        return self.namespace + "_"

    def inner_name(self, name: str) -> str | None:
        return name[len(self.prefix) :] if name.startswith(self.prefix) else None


def mount(parent: Server, child: Server, namespace: str) -> Mount:
    """Attach ``child`` under ``namespace`` (see :meth:`Server.mount`)."""
    if child is parent:
        raise ValueError("a server cannot be mounted into itself")
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise ValueError(
            f"namespace must be 1-64 letters, digits, '_', '.' or '-', not {namespace!r}"
        )
    if _reaches(child, parent):
        raise ValueError(f"mounting {child.name!r} here would make a cycle")
    if any(m.namespace == namespace for m in parent.mounts):
        raise ValueError(f"namespace {namespace!r} is already mounted on {parent.name!r}")
    entry = Mount(parent, child, namespace)

    def relay(event: ChangeEvent) -> None:
        if event.kind == RESOURCE_UPDATED:
            if event.uri is not None:
                parent.bus.publish(
                    ChangeEvent(RESOURCE_UPDATED, namespace_uri(namespace, event.uri))
                )
        elif event.kind in ("tools", "prompts", RESOURCES):
            parent._changed(event.kind)

    entry._relay = relay
    child.bus.add_relay(relay)
    first = not parent.mounts
    parent.mounts.append(entry)
    if first:
        _hook_lifespan(parent)
        _hook_interest(parent)
        rebuild(parent)
    if parent._tg is not None:  # mounted while the parent runs: start the child now
        _start(entry)
    _announce(parent, child)
    return entry


def unmount(parent: Server, which: Server | str) -> None:
    """Detach the mount named ``which`` (a namespace) or of ``which`` (a server)."""
    for entry in parent.mounts:
        if entry.namespace == which or entry.child is which:
            parent.mounts.remove(entry)
            if entry._relay is not None:
                entry.child.bus.remove_relay(entry._relay)
            if entry._stop is not None:
                entry._stop.set()
            if not parent.mounts:
                rebuild(parent)
            _announce(parent, entry.child)
            return
    raise KeyError(f"nothing is mounted as {which!r} on {parent.name!r}")


def merge_capabilities(parent: Server, caps: dict[str, Any], era: Era) -> dict[str, Any]:
    """Add what the mounted children offer to the parent's own capabilities."""
    for entry in parent.mounts:
        theirs = entry.child.capabilities(era)
        for key in ("tools", "prompts"):
            if key in theirs:
                caps[key] = {"listChanged": True}
        if "resources" in theirs:
            own = caps.setdefault("resources", {"listChanged": True})
            if (theirs["resources"] or {}).get("subscribe"):
                own["subscribe"] = True
        if "completions" in theirs:
            caps["completions"] = {}
        extensions = theirs.get("extensions")
        if isinstance(extensions, dict) and extensions:
            caps["extensions"] = {**extensions, **(caps.get("extensions") or {})}
    return caps


# ---------------------------------------------------------------------- internals


def _start(entry: Mount) -> None:
    """Run the child (its lifespan, background work: a proxy's upstream connection) for
    as long as the parent runs, in a task of the parent's, until unmounted."""
    stop, done = entry._stop, entry._done = anyio.Event(), anyio.Event()
    started = entry._started = anyio.Event()

    async def keep() -> None:
        try:
            # Shielded: it ends when ``stop`` is set (unmount, or the parent's lifespan
            # ending), so the child shuts down gracefully, not cancelled mid-cleanup.
            with anyio.CancelScope(shield=True):
                async with entry.child.running():
                    started.set()
                    await stop.wait()
        except Exception:
            log.exception("mounted server %r failed to run", entry.child.name)
        finally:
            started.set()
            done.set()

    entry.parent.spawn(keep)


def _hook_interest(parent: Server) -> None:
    """Someone watching ``data://x/config`` on the parent watches ``data://config`` on the
    child mounted as ``x``: a child that relays another server's resources (a proxy)
    subscribes upstream only to what is watched."""
    before = parent.bus.on_interest

    def interest(uri: str, wanted: bool) -> None:
        if before is not None:
            before(uri, wanted)
        for entry in _ordered(parent):
            inner = strip_uri(entry.namespace, uri)
            if inner is not None:
                entry.child.bus.want((inner,), wanted)
                return

    parent.bus.on_interest = interest


def _hook_lifespan(parent: Server) -> None:
    """The parent's lifespan starts its mounted children first and stops them last."""
    if parent in _hooked:
        return
    _hooked.add(parent)
    user = parent._lifespan

    @contextlib.asynccontextmanager
    async def composed(server: Any) -> AsyncIterator[Any]:
        for entry in list(parent.mounts):
            _start(entry)
        for entry in list(parent.mounts):  # serve once every child is up (or failed)
            if entry._started is not None:
                await entry._started.wait()
        try:
            if user is None:
                yield None
            else:
                async with user(server) as value:
                    yield value
        finally:
            with anyio.CancelScope(shield=True):
                for entry in list(parent.mounts):
                    if entry._stop is not None and entry._done is not None:
                        entry._stop.set()
                        await entry._done.wait()

    parent._lifespan = composed


def _reaches(server: Server, target: Server) -> bool:
    return server is target or any(_reaches(m.child, target) for m in server.mounts)


def _announce(parent: Server, child: Server) -> None:
    """The parent's lists changed by what the child offers."""
    for kind, has in (
        ("tools", child.has_capability("tools")),
        ("prompts", child.has_capability("prompts")),
        (RESOURCES, child.has_capability("resources")),
    ):
        if has:
            parent._changed(kind)


def _ordered(parent: Server) -> list[Mount]:
    """Most recent first, longest namespace first (so ``a-b`` wins over ``a``)."""
    recent = list(reversed(parent.mounts))
    return sorted(recent, key=lambda m: -len(m.namespace))


def strip_server_info(result: dict[str, Any]) -> dict[str, Any]:
    """The child's (or upstream's) serverInfo goes: the parent or proxy answers as itself."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and META_SERVER_INFO in meta:
        rest = {k: v for k, v in meta.items() if k != META_SERVER_INFO}
        result = {k: v for k, v in result.items() if k != "_meta"}
        if rest:
            result["_meta"] = rest
    return result


async def _forward(entry: Mount, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": ctx.request_id, "method": ctx.method, "params": params}
    result = await entry.child.dispatch(
        message, ctx.meta, ctx.exchange, session=ctx.session, principal=ctx.principal
    )
    return _tag_task(entry, strip_server_info(result))


def _tag_task(entry: Mount, result: dict[str, Any]) -> dict[str, Any]:
    """A task the child started is named ``{namespace}~{id}`` here, so ``tasks/*`` find
    their way back to it."""
    task_id = result.get("taskId")
    if isinstance(task_id, str) and result.get("resultType", "task") in ("task", "complete"):
        result = {**result, "taskId": f"{entry.namespace}{TASK_SEPARATOR}{task_id}"}
    return result


async def _all_pages(
    run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    base: dict[str, Any],
    member: str,
) -> tuple[list[Any], dict[str, Any]]:
    items: list[Any] = []
    cursor: Any = None
    last: dict[str, Any] = {}
    for _ in range(_MAX_PAGES):
        params = {k: v for k, v in base.items() if k != "cursor"}
        if cursor is not None:
            params["cursor"] = cursor
        last = await run(params)
        items.extend(last.get(member) or [])
        cursor = last.get("nextCursor")
        if not isinstance(cursor, str):
            break
    return items, last


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
            for entry in parent.mounts:
                kind = "resources" if member == "resourceTemplates" else member
                if not entry.child.has_capability(kind):
                    continue
                theirs, last = await _all_pages(partial(_forward, entry, ctx), base, member)
                if isinstance(last.get("ttlMs"), int):
                    ttl = min(ttl, last["ttlMs"])
                if last.get("cacheScope") == "private":
                    scope = "private"
                for item in theirs:
                    if not isinstance(item, dict) or not isinstance(item.get(key), str):
                        continue
                    renamed = (
                        entry.prefix + item[key]
                        if key == "name"
                        else namespace_uri(entry.namespace, item[key])
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
                for entry in _ordered(parent):
                    inner = entry.inner_name(name)
                    if inner is not None and entry.child.has_capability(kind):
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
            for entry in _ordered(parent):
                inner = strip_uri(entry.namespace, uri)
                if inner is not None and entry.child.has_capability("resources"):
                    result = await _forward(entry, ctx, {**ctx.params, "uri": inner})
                    return _rename_contents(entry, result)
        return await read_original(ctx)

    complete_original = own["completion/complete"]

    async def complete(ctx: Context) -> dict[str, Any]:
        ref = ctx.params.get("ref")
        if isinstance(ref, dict):
            for entry in _ordered(parent):
                if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
                    if ref["name"] in parent.prompts:
                        break
                    inner = entry.inner_name(ref["name"])
                    renamed = {**ref, "name": inner}
                elif ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
                    if own_uri(ref["uri"]) or any(
                        t.wire["uriTemplate"] == ref["uri"] for t in parent.templates
                    ):
                        break
                    inner = strip_uri(entry.namespace, ref["uri"])
                    renamed = {**ref, "uri": inner}
                else:
                    break
                if inner is None:
                    continue
                if not entry.child.has_capability("completions"):
                    return {"completion": {"values": [], "total": 0, "hasMore": False}}
                return await _forward(entry, ctx, {**ctx.params, "ref": renamed})
        return await complete_original(ctx)

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
                {**c, "uri": namespace_uri(entry.namespace, c["uri"])}
                if isinstance(c, dict) and isinstance(c.get("uri"), str)
                else c
                for c in contents
            ],
        }
    return result
