"""The composition methods of :class:`~mcpkit.server.Server` (a mixin, split out of
``server.py`` to keep that file about requests and registrations): mounts, tool
transforms and tool search.  Each is a layer around the server's handlers (see
:mod:`.layers`); the work is done in :mod:`.mount`, :mod:`.transform` and :mod:`.search`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .mount import Mount
    from .search import ToolSearch
    from .server import Server
    from .transform import ToolTransform

__all__ = ["Composition"]


class Composition:
    """``mount``/``unmount``, ``transform_tool`` and ``enable_tool_search``."""

    #: Servers mounted into this one (see :meth:`mount`).
    mounts: list[Mount]
    #: Tool transforms by the original tool name (see :meth:`transform_tool`).
    tool_transforms: dict[str, ToolTransform]
    #: Set by :meth:`enable_tool_search`.
    tool_search: ToolSearch | None

    def _init_composition(self) -> None:
        self.mounts = []
        self.tool_transforms = {}
        self.tool_search = None

    def mount(
        self,
        other: Server,
        namespace: str | None = None,
        *,
        prefix: str | None = None,
        keep_uris: bool = False,
    ) -> Mount:
        """Serve ``other``'s tools, prompts, resources and templates under ``namespace``
        (``x_tool``, ``data://x/config``), live: its later changes show here, its
        middleware runs inside this server's, and this server's lifespan runs it.
        ``prefix`` names tools and prompts with an explicit prefix (``""``: none; the
        namespace then defaults to ``other.name``), ``keep_uris`` keeps resource URIs as
        they are, routed by which mount serves them; a name two mounts would share is
        refused at start.  See :mod:`mcpkit.server.mount`."""
        from .mount import mount

        return mount(cast("Server", self), other, namespace, prefix=prefix, keep_uris=keep_uris)

    def unmount(self, which: Server | str) -> None:
        """Remove a mount, by namespace or by the mounted server (at run time too)."""
        from .mount import unmount

        unmount(cast("Server", self), which)

    def transform_tool(
        self,
        name: str,
        *,
        new_name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        args: dict[str, dict[str, Any]] | None = None,
        wrap: Callable[..., Any] | None = None,
    ) -> ToolTransform:
        """Reshape tool ``name`` (own, mounted or proxied): rename it, describe it, rename,
        describe, default or hide its arguments (``args={"old": {"name": ..., "hide":
        True, "default": ...}}``), or ``wrap`` its calls.  See
        :mod:`mcpkit.server.transform`."""
        from .transform import ToolTransform, install

        rule = ToolTransform(name, new_name or name, title, description, dict(args or {}), wrap)
        return install(cast("Server", self), rule)

    def enable_tool_search(
        self, *, strategy: str = "bm25", always: Iterable[str] = (), max_results: int = 8
    ) -> ToolSearch:
        """List only the ``always`` tools plus ``search_tools`` (BM25 or ``"regex"``) and
        ``call_tool``: for catalogs too large to show a model.  See
        :mod:`mcpkit.server.search`."""
        from .search import enable

        return enable(
            cast("Server", self), strategy=strategy, always=always, max_results=max_results
        )
