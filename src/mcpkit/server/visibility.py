"""Which tools, resources, templates and prompts a caller can see.

Three layers, all answered the same way: a hidden item is absent from its list and, when
called by name, answers exactly as an unknown one does (a caller cannot tell "hidden"
from "does not exist").

* static tags: ``Server(include_tags=..., exclude_tags=...)``;
* run-time switches: ``server.disable("name", tags={"beta"})`` / ``server.enable(...)``,
  which send ``list_changed``;
* a per-request filter: ``@server.visibility_filter`` decorates
  ``fn(ctx, kind, name, tags) -> bool`` (e.g. by ``ctx.principal`` or a header), which
  lists and calls both obey.

When none is in use, :attr:`Visibility.active` is False and the handlers skip every check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..runtime.changes import PROMPTS, RESOURCES, TOOLS

if TYPE_CHECKING:
    from .context import Context

__all__ = ["Filter", "Visibility", "VisibilityControls"]

#: ``fn(ctx, kind, name, tags) -> bool``; kind is "tool", "resource", "template" or
#: "prompt"; name is the tool/prompt name, the resource URI or the URI template.
Filter = Callable[["Context", str, str, frozenset[str]], bool]


class Visibility:
    __slots__ = ("active", "disabled_names", "disabled_tags", "exclude", "filter", "include")

    def __init__(self, include: Iterable[str] | None, exclude: Iterable[str] | None) -> None:
        self.include = None if include is None else frozenset(include)
        self.exclude = frozenset(exclude or ())
        self.disabled_names: set[str] = set()
        self.disabled_tags: set[str] = set()
        self.filter: Filter | None = None
        self.active = False
        self.update()

    def update(self) -> None:
        self.active = bool(
            self.include is not None
            or self.exclude
            or self.disabled_names
            or self.disabled_tags
            or self.filter is not None
        )

    def shown(self, name: str, tags: frozenset[str]) -> bool:
        """Visible to everyone (tags and run-time switches; no request needed)."""
        if name in self.disabled_names:
            return False
        if self.include is not None and not tags & self.include:
            return False
        return not (tags & self.exclude or tags & self.disabled_tags)

    def allows(self, ctx: Context, kind: str, name: str, tags: frozenset[str]) -> bool:
        """Visible to this request."""
        if not self.shown(name, tags):
            return False
        return self.filter is None or bool(self.filter(ctx, kind, name, tags))


class VisibilityControls:
    """``server.disable`` / ``enable`` / ``visibility_filter`` (a mixin of ``Server``)."""

    visibility: Visibility

    def _changed(self, kind: str) -> None:
        raise NotImplementedError

    def disable(self, *names: str, tags: Iterable[str] = ()) -> None:
        """Hide tools, prompts and resources by name (or URI) or by tag, at run time; a
        hidden item answers as an unknown one.  Sends ``list_changed``."""
        self.visibility.disabled_names.update(names)
        self.visibility.disabled_tags.update(check_tags(tags))
        self._visibility_changed()

    def enable(self, *names: str, tags: Iterable[str] = ()) -> None:
        """Undo :meth:`disable` for these names and tags.  Sends ``list_changed``."""
        self.visibility.disabled_names.difference_update(names)
        self.visibility.disabled_tags.difference_update(check_tags(tags))
        self._visibility_changed()

    def visibility_filter(self, fn: Filter) -> Filter:
        """Decorator: ``fn(ctx, kind, name, tags) -> bool`` decides per request what a
        caller sees and may call (kind: "tool", "resource", "template", "prompt")."""
        self.visibility.filter = fn
        self._visibility_changed()
        return fn

    def _visibility_changed(self) -> None:
        self.visibility.update()
        for kind in (TOOLS, PROMPTS, RESOURCES):
            self._changed(kind)


def check_tags(tags: Any) -> frozenset[str]:
    if tags is None:
        return frozenset()
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise TypeError("tags must be a set of strings, e.g. tags={'admin'}")
    return frozenset(tags)
