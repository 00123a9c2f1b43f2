"""Who serves a kept URI: the first child to offer it keeps it.

Children mounted with ``keep_uris`` (a gateway's upstreams) share one URI space, so one
child could start offering another's URI at run time (``secret://vault``) and take over
its reads, or swap an MCP App's ``ui://`` view.  The parent records, per front URI, per
URI template and per view, the child that offered it first:

* at the first question (every child's lists, in mount order), then on every list change
  a child announces and when a child is mounted (a reload), for that child;
* a later claimant of a recorded URI or template, or of a URI a recorded template of
  another child matches, is refused: logged once, left out of the parent's lists, never
  routed to.  An owner keeps what it offered until it is unmounted (a reload that
  removes or replaces it), also while it is down or after it stopped listing it;
* a ``ui://`` view is routed only to a child whose tool names it (``_meta.ui.resourceUri``),
  the first such child keeping it.

Reads of a recorded URI go to its owner whatever the other children list (a child that is
down for a while does not lose its URIs to another).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from .uritemplate import TemplateError, UriTemplate

if TYPE_CHECKING:
    from .mount import Mount
    from .server import Server

__all__ = ["UriOwners", "owners_of", "resettle", "settle", "view_of"]

log = logging.getLogger("mcpkit.server")


def view_of(tool: dict[str, Any]) -> str | None:
    """The ``ui://`` view a tool names (``_meta.ui.resourceUri``), if any."""
    meta = tool.get("_meta")
    ui = meta.get("ui") if isinstance(meta, dict) else None
    uri = ui.get("resourceUri") if isinstance(ui, dict) else None
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None


def _matches(template: str, uri: str) -> bool:
    try:
        return UriTemplate.compile(template).match(uri) is not None
    except TemplateError:
        return False


@dataclass
class UriOwners:
    """The first owner (a mount's namespace) of each kept URI, template and view."""

    uris: dict[str, str] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)
    #: Claims refused and logged (namespace, what), so each is logged once.
    refused: set[tuple[str, str]] = field(default_factory=set)
    ready: bool = False
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    def claim_uri(self, uri: str, namespace: str) -> bool:
        owner = self.uris.get(uri)
        if owner is None and self.ready:
            # After the start, a URI another child's template already covers is theirs.
            owner = next(
                (ns for t, ns in self.templates.items() if ns != namespace and _matches(t, uri)),
                None,
            )
        if owner is None:
            self.uris[uri] = namespace
            return True
        return owner == namespace or self._refuse(namespace, uri, owner)

    def claim_template(self, template: str, namespace: str) -> bool:
        owner = self.templates.setdefault(template, namespace)
        return owner == namespace or self._refuse(namespace, template, owner)

    def _refuse(self, namespace: str, what: str, owner: str) -> bool:
        if (namespace, what) not in self.refused:
            self.refused.add((namespace, what))
            log.warning(
                "mounted %s offers %r, which mounted %s already serves: refused "
                "(the first owner keeps it)",
                namespace,
                what,
                owner,
            )
        return False

    def allows(self, namespace: str, what: str, *, template: bool = False) -> bool:
        """Whether ``namespace`` may serve (and list) ``what``."""
        owner = (self.templates if template else self.uris).get(what)
        return owner is None or owner == namespace

    def release(self, namespace: str) -> None:
        """Everything ``namespace`` owned is free again (it was unmounted)."""
        for table in (self.uris, self.templates):
            for what in [w for w, ns in table.items() if ns == namespace]:
                del table[what]
        self.refused = {r for r in self.refused if r[0] != namespace}


_registries: weakref.WeakKeyDictionary[Server, UriOwners] = weakref.WeakKeyDictionary()


def owners_of(parent: Server) -> UriOwners:
    owners = _registries.get(parent)
    if owners is None:
        owners = _registries[parent] = UriOwners()
    return owners


async def _offers(entry: Mount) -> tuple[list[str], list[str]]:
    """What a kept child offers now: its URIs (listed resources other than views, views
    its tools name) and its templates.  Asked as the parent (no caller)."""
    from .mount_routes import _child_list

    resources = await _child_list(entry, "resources/list", None)
    templates = await _child_list(entry, "resources/templates/list", None)
    tools = await _child_list(entry, "tools/list", None)
    # A view belongs to a child whose tool names it: listing one is no claim to it.
    uris = [
        str(r["uri"])
        for r in resources
        if isinstance(r.get("uri"), str) and not str(r["uri"]).startswith("ui://")
    ]
    uris += [view for t in tools if (view := view_of(t)) is not None]
    texts = [str(t["uriTemplate"]) for t in templates if isinstance(t.get("uriTemplate"), str)]
    return uris, texts


async def _settle_one(owners: UriOwners, entry: Mount) -> None:
    uris, templates = await _offers(entry)
    for template in templates:
        owners.claim_template(template, entry.namespace)
    for uri in uris:
        owners.claim_uri(uri, entry.namespace)


async def settle(parent: Server, entry: Mount | None = None) -> UriOwners:
    """Record what the kept children offer: all of them (in mount order) the first time,
    then ``entry`` alone (a list change, a new mount)."""
    owners = owners_of(parent)
    async with owners.lock:
        if not owners.ready:
            for each in list(parent.mounts):
                if each.keep_uris:
                    await _settle_one(owners, each)
            owners.ready = True
        elif entry is not None and entry in parent.mounts:
            await _settle_one(owners, entry)
    return owners


def resettle(parent: Server, namespace: str) -> None:
    """The child mounted as ``namespace`` changed its lists (heard by the parent's owner
    rather than on the child's bus): record what it offers again, in the background."""
    entry = next((m for m in parent.mounts if m.namespace == namespace), None)
    if entry is not None and entry.keep_uris and parent._tg is not None:
        parent.spawn(partial(settle, parent, entry))


async def ready(parent: Server) -> UriOwners:
    """The parent's owners, recorded at least once."""
    owners = owners_of(parent)
    return owners if owners.ready else await settle(parent)


def forget(parent: Server, namespace: str) -> None:
    """An unmounted child's URIs are free again."""
    owners = _registries.get(parent)
    if owners is not None:
        owners.release(namespace)
