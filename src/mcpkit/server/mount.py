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

Naming options (what a gateway's ``[[upstream]]`` needs): ``prefix="gh_"`` gives tool and
prompt names an explicit prefix instead of ``{namespace}_``, and ``prefix=""`` none at all;
several children may share one prefix (``""``), and a name then goes to the child that
lists it.  ``keep_uris=True`` leaves the child's resource URIs as they are, and a read
(or a completion, a subscription) goes to the child that lists the URI or has a template
matching it.  Names two children would both offer under one front name are refused
when the parent starts (:class:`NameClash`, naming both), as soon as a mount uses either
option; :func:`check_names` runs the same check at any time.

Precedence: the parent's own registrations win, then the most recently mounted child
whose prefix matches (the longest prefix first when one is a prefix of another).  A kept
URI (``keep_uris``), template or ``ui://`` view stays with the first child that offered
it; a later claimant is refused (:mod:`.uri_owners`).
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
from . import uri_owners
from .layers import rebuild

if TYPE_CHECKING:
    from .context import Context
    from .server import Server

__all__ = ["Mount", "NameClash", "check_names", "namespace_uri", "strip_uri"]

log = logging.getLogger("mcpkit.server")
Handler = Callable[["Context"], Awaitable[dict[str, Any]]]
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: List method -> (its result member, the key naming an item).
LISTS = _LISTS = {
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
#: Running lifespans (their exit stacks) that stop the children mounted at run time.
_cleaned: weakref.WeakSet[contextlib.AsyncExitStack] = weakref.WeakSet()


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
    #: An explicit tool/prompt name prefix (``""`` for none); None: ``{namespace}_``.
    name_prefix: str | None = None
    #: Resource URIs as the child has them, routed by which child serves them.
    keep_uris: bool = False

    @property
    def prefix(self) -> str:
        return self.namespace + "_" if self.name_prefix is None else self.name_prefix

    def inner_name(self, name: str) -> str | None:
        return name[len(self.prefix) :] if name.startswith(self.prefix) else None

    def front_uri(self, uri: str) -> str:
        """The child's ``uri`` as the parent serves it."""
        return uri if self.keep_uris else namespace_uri(self.namespace, uri)


class NameClash(ValueError):
    """Two mounted children (or a child and the parent) offer the same front name."""


def mount(
    parent: Server,
    child: Server,
    namespace: str | None = None,
    *,
    prefix: str | None = None,
    keep_uris: bool = False,
) -> Mount:
    """Attach ``child`` under ``namespace`` (see :meth:`Server.mount`)."""
    if namespace is None:
        if prefix is None:
            raise ValueError("mount needs a namespace (or an explicit prefix)")
        namespace = child.name
    if prefix is not None and not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string, not {prefix!r}")
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
    entry = Mount(parent, child, namespace, name_prefix=prefix, keep_uris=keep_uris)

    def relay(event: ChangeEvent) -> None:
        if event.kind == RESOURCE_UPDATED:
            if event.uri is not None:
                parent.bus.publish(ChangeEvent(RESOURCE_UPDATED, entry.front_uri(event.uri)))
        elif event.kind in ("tools", "prompts", RESOURCES):
            parent._changed(event.kind)
            if entry.keep_uris and event.kind != "prompts" and parent._tg is not None:
                # (tools name views) who owns what is recorded again for this child
                parent.spawn(partial(uri_owners.settle, parent, entry))

    entry._relay = relay
    child.bus.add_relay(relay)
    first = not parent.mounts
    hooked = parent in _hooked  # (its running lifespan, if any, stops the children)
    parent.mounts.append(entry)
    if first:
        _hook_lifespan(parent)
        _hook_interest(parent)
        rebuild(parent)
    if parent._tg is not None:  # mounted while the parent runs: start the child now
        if not hooked:
            _stop_on_exit(parent)
        _start(entry)
        if keep_uris:
            parent.spawn(partial(_settle_when_started, entry))
    _announce(parent, child)
    return entry


def unmount(parent: Server, which: Server | str) -> None:
    """Detach the mount named ``which`` (a namespace) or of ``which`` (a server)."""
    for entry in parent.mounts:
        if entry.namespace == which or entry.child is which:
            parent.mounts.remove(entry)
            uri_owners.forget(parent, entry.namespace)
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
        if isinstance(extensions, dict):
            # A child's custom methods are not routed through the mount: the extensions
            # they belong to stay the child's.
            custom = getattr(entry.child, "custom_methods", {})
            unrouted = {m.extension for m in custom.values()}
            extensions = {k: v for k, v in extensions.items() if k not in unrouted}
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


async def _settle_when_started(entry: Mount) -> None:
    """Record the URIs of a child mounted at run time (a reload), once it runs."""
    if entry._started is not None:
        await entry._started.wait()
    await uri_owners.settle(entry.parent, entry)


def _hook_interest(parent: Server) -> None:
    """Someone watching ``data://x/config`` on the parent watches ``data://config`` on the
    child mounted as ``x``: a child that relays another server's resources (a proxy)
    subscribes upstream only to what is watched.  A kept URI (``keep_uris``) is watched
    at the child serving it, found by listing (in the background)."""
    before = parent.bus.on_interest
    #: Kept URIs watched, and the child watching each.
    owners: dict[str, Mount] = {}

    async def watch_at_owner(uri: str) -> None:
        from .mount_routes import owner_of

        entry = await owner_of(parent, uri)
        if entry is not None and uri in parent.bus.watched() and uri not in owners:
            owners[uri] = entry
            entry.child.bus.want((uri,), True)

    def interest(uri: str, wanted: bool) -> None:
        if before is not None:
            before(uri, wanted)
        for entry in _ordered(parent):
            inner = None if entry.keep_uris else strip_uri(entry.namespace, uri)
            if inner is not None:
                entry.child.bus.want((inner,), wanted)
                return
        if not wanted:
            owner = owners.pop(uri, None)
            if owner is not None:
                owner.child.bus.want((uri,), False)
        elif parent._tg is not None and any(m.keep_uris for m in parent.mounts):
            parent.spawn(partial(watch_at_owner, uri))

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
        stopped = False
        try:
            if any(m.name_prefix is not None or m.keep_uris for m in parent.mounts):
                await check_names(parent)  # two owners of one name: refuse to start
        except BaseException:
            stopped = True
            await _stop_all(parent)
            raise
        try:
            if user is None:
                yield None
            else:
                async with user(server) as value:
                    yield value
        finally:
            if not stopped:
                await _stop_all(parent)

    parent._lifespan = composed


def _stop_on_exit(parent: Server) -> None:
    """A parent that runs since before its first mount has a lifespan without
    :func:`_hook_lifespan`'s cleanup: stop its children when that lifespan ends too
    (else their tasks, shielded, would keep the parent from stopping; they stop before
    the parent's own lifespan ends, not after as for a parent hooked before it ran)."""
    stack = getattr(parent, "_lifespan_stack", None)
    if stack is not None and stack not in _cleaned:
        _cleaned.add(stack)
        stack.push_async_callback(_stop_all, parent)


async def _stop_all(parent: Server) -> None:
    with anyio.CancelScope(shield=True):
        for entry in list(parent.mounts):
            if entry._stop is not None and entry._done is not None:
                entry._stop.set()
                await entry._done.wait()


def _reaches(server: Server, target: Server) -> bool:
    return server is target or any(_reaches(m.child, target) for m in server.mounts)


def _announce(parent: Server, child: Server) -> None:
    """The parent's lists changed by what the child offers."""
    for kind, has in (
        ("tools", child.answers_for("tools")),
        ("prompts", child.answers_for("prompts")),
        (RESOURCES, child.answers_for("resources")),
    ):
        if has:
            parent._changed(kind)


def _ordered(parent: Server) -> list[Mount]:
    """Most recent first, longest prefix first (so ``a-b_`` wins over ``a_``)."""
    recent = list(reversed(parent.mounts))
    return sorted(recent, key=lambda m: -len(m.prefix))


def strip_server_info(result: dict[str, Any]) -> dict[str, Any]:
    """The child's (or upstream's) serverInfo goes: the parent or proxy answers as itself."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and META_SERVER_INFO in meta:
        rest = {k: v for k, v in meta.items() if k != META_SERVER_INFO}
        result = {k: v for k, v in result.items() if k != "_meta"}
        if rest:
            result["_meta"] = rest
    return result


async def _forward(
    entry: Mount, ctx: Context, params: dict[str, Any], method: str | None = None
) -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": ctx.request_id,
        "method": method or ctx.method,
        "params": params,
    }
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
    cursor: object = None
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
    """The mount-aware handlers around ``own`` (see :mod:`.mount_routes`)."""
    from .mount_routes import layer as routes

    return routes(parent, own)


async def check_names(parent: Server) -> None:
    """Refuse (:class:`NameClash`, naming both owners) when two mounted children, or a
    child and ``parent`` itself, offer the same front name (see :mod:`.mount_routes`)."""
    from .mount_routes import check_names as check

    await check(parent)
