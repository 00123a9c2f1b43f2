"""What the layers below the server need from it, as structural types.

Transports and the runtime serve an MCP server without importing the server package
(docs/architecture.md: layers import only downward).  These protocols name exactly the surface they
use; :class:`mcpkit.server.Server` satisfies them (checked by mypy where it is passed in).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..types.versions import Era

if TYPE_CHECKING:
    from ..protocol.headers import HeaderParam
    from ..protocol.negotiation import RequestMeta
    from ..types.methods import MethodSpec
    from .changes import ChangeBus
    from .exchange import Exchange
    from .legacy_session import LegacySession


class CalledTool(Protocol):
    """What a transport reads of a registered tool before dispatch (``ToolEntry``): the
    headers it mirrors, and the tags visibility rules match."""

    @property
    def tags(self) -> frozenset[str]: ...

    @property
    def header_params(self) -> tuple[HeaderParam, ...]: ...


class ToolVisibility(Protocol):
    """Which tools callers see (``server.visibility``): rules apply only when active."""

    @property
    def active(self) -> bool: ...

    def shown(self, name: str, tags: frozenset[str]) -> bool: ...


class Dispatcher(Protocol):
    """Answers one request (raises ``McpError``).  ``local``: the answer of a legacy
    session's own method, which the dispatcher runs in place of its handler."""

    async def dispatch(
        self,
        message: dict[str, Any],
        meta: RequestMeta,
        exchange: Exchange,
        *,
        session: LegacySession | None = None,
        principal: object = None,
        local: Callable[[Any], Awaitable[dict[str, Any]]] | None = None,
    ) -> dict[str, Any]: ...


class LegacyHost(Dispatcher, Protocol):
    """What a legacy session needs to answer ``initialize``."""

    info: dict[str, Any]
    instructions: str | None
    legacy_versions: tuple[str, ...]

    def capabilities(self, era: Era = ...) -> dict[str, Any]: ...


class CapabilitySource(Protocol):
    """What ``subscriptions/listen`` filtering needs."""

    extensions: dict[str, dict[str, Any]]

    def capabilities(self, era: Era = ...) -> dict[str, Any]: ...


class ServedServer(LegacyHost, CapabilitySource, Protocol):
    """Everything a transport uses of the server it serves."""

    modern_versions: tuple[str, ...]
    bus: ChangeBus

    @property
    def custom_specs(self) -> Mapping[str, MethodSpec]:
        """Methods the server's extensions registered (``types.methods.custom_method``
        rows): the transports' method checks accept them besides the built-in table."""

    #: Every ``tools/call`` waits (``Server.calls_wait``).
    calls_wait: bool

    @property
    def visibility(self) -> ToolVisibility:
        """Which tools callers see (``server.visibility``)."""

    @property
    def can_spawn(self) -> bool:
        """Whether :meth:`spawn` can run background work now (inside ``running()``)."""

    @property
    def tools(self) -> Mapping[str, CalledTool]: ...

    @property
    def state(self) -> Any: ...

    def running(self) -> contextlib.AbstractAsyncContextManager[Any]: ...

    def spawn(self, fn: Callable[[], Awaitable[object]]) -> None: ...

    async def dispatch_notification(
        self,
        message: dict[str, Any],
        *,
        session: LegacySession | None = None,
        principal: object = None,
    ) -> None: ...


def called_tool(server: ServedServer, message: dict[str, Any]) -> CalledTool | None:
    """The registered tool a ``tools/call`` request names; None for any other method, or a
    name that is missing, not a string, not registered or hidden from every caller (so
    the transport's header checks treat a hidden tool as the unknown one it answers as)."""
    if message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if not isinstance(name, str):
        return None
    tool = server.tools.get(name)
    if (
        tool is not None
        and server.visibility.active
        and not server.visibility.shown(name, getattr(tool, "tags", frozenset()))
    ):
        return None
    return tool
