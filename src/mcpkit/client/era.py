"""The two protocol eras as the client sees them: every difference in one object.

The server decides the era once and then runs ``modern.py`` or ``legacy.py``; the client
does the same.  :class:`~mcpkit.client.session.Session` picks an :class:`EraRules` once per
connection (:func:`pinned`, the era cache or the probe) and from then on asks it, never the
era's name, how to behave:

* how the connection starts: ``server/discover`` (optional, version negotiated by
  ``-32022`` retries) or ``initialize`` + ``notifications/initialized``;
* how a request is framed: a fresh ``_meta`` per request (version, capabilities, client
  info, log level) or the session's state, with only the caller's ``_meta`` and the
  progress token;
* headers on notifications (``MCP-Protocol-Version`` and ``Mcp-Method`` on the modern era;
  the transport's session headers on the legacy one) and ``Mcp-Param-*`` on tool calls;
* how a failed request recovers: another protocol version (``-32022``) or a new session
  (legacy HTTP session expired);
* which methods exist (read from :data:`~mcpkit.types.methods.METHODS`): ``server/discover``
  and ``subscriptions/listen`` against ``ping``, ``logging/setLevel``,
  ``resources/subscribe`` and ``notifications/roots/list_changed``;
* which capabilities the client can declare (the tasks extension; roots ``listChanged``).

Cancellation and MRTR rounds need no rule of their own here: the transport reads the era of
each message off its ``_meta`` (:mod:`mcpkit.transports.client_http_wire`), and the MRTR
loop only runs when a result asks for input, which legacy servers never do.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ..transports.client_base import (
    HttpStatusError,
    ProtocolViolationError,
    RequestTimeoutError,
    ServerError,
    SessionExpiredError,
)
from ..types.errors import (
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..types.methods import METHODS
from ..types.versions import META_SERVER_INFO, Era, EraChoice
from .errors import VersionNegotiationError
from .models import ServerInfo

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger("mcpkit.client")

__all__ = ["LEGACY", "MODERN", "EraRules", "NotModern", "pinned", "sse_fallback_allowed"]


class NotModern(Exception):
    """The probe's answer was not a modern one: fall back to ``initialize``."""


class EraRules(ABC):
    """How a connection behaves in one era; stateless (the state lives in the session)."""

    #: The era's name, as :attr:`Client.era <mcpkit.client.Client.era>` reports it.
    name: ClassVar[Era]
    #: The client may declare the tasks extension (capability ``extensions``).
    declares_tasks: ClassVar[bool]
    #: Tool calls carry ``Mcp-Param-*`` headers from the tool's ``x-mcp-header`` annotations.
    param_headers: ClassVar[bool]

    def offers(self, method: str) -> bool:
        """Whether ``method`` exists in this era (per the method table)."""
        spec = METHODS.get(method)
        return spec is not None and self.name in spec.eras

    @abstractmethod
    async def start(self, session: Session, version: str | None = None) -> None:
        """Open the connection in this era (``version``: one remembered for the server)."""

    @abstractmethod
    def frame(
        self, session: Session, caller_meta: Mapping[str, Any] | None, token: str | None
    ) -> dict[str, Any]:
        """The ``_meta`` of one request, before the caller's ``meta=`` and trace context."""

    @abstractmethod
    def notify_headers(self, session: Session, method: str) -> dict[str, str] | None:
        """Extra HTTP headers of a client notification (None: the transport's own)."""

    @abstractmethod
    async def recover(
        self, session: Session, failure: Exception, generation: int, attempt: int
    ) -> bool:
        """After request attempt ``attempt`` (0-based) failed with ``failure``: repair the
        connection and return True to send it again, or False to raise ``failure``."""


class ModernEra(EraRules):
    """2026-07-28: stateless; every request carries its own ``_meta``."""

    name = "modern"
    declares_tasks = True
    param_headers = True

    async def start(self, session: Session, version: str | None = None) -> None:
        session.rules = self
        session.version = version or session.options.protocol.protocol_versions[0]
        if session.options.protocol.discover:
            await self.discover(session, probe=False)
        else:
            session.info = ServerInfo(self.name, session.version)

    async def discover(self, session: Session, *, probe: bool) -> None:
        """``server/discover``; as the probe, anything but a modern answer raises
        :class:`NotModern` (the fallback never keys on one error code)."""
        protocol = session.options.protocol
        session.rules = self
        if session.version not in protocol.protocol_versions:
            session.version = protocol.protocol_versions[0]
        timeouts = session.options.timeouts
        timeout = timeouts.probe_timeout if probe else timeouts.timeout
        for _attempt in range(3):
            try:
                result = await session.handshake(
                    "server/discover", lambda: {"_meta": session.meta()}, timeout
                )
            except ServerError as exc:
                if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                    self.switch_version(session, exc, probe=probe)
                    continue
                if probe and exc.code not in (HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY):
                    raise NotModern(str(exc)) from None
                raise
            except (RequestTimeoutError, HttpStatusError, ProtocolViolationError) as exc:
                if probe:
                    raise NotModern(str(exc)) from None
                raise
            session.info = self._discovered(session, result, probe=probe)
            return
        raise VersionNegotiationError(
            f"the server kept rejecting protocol version {session.version!r} with -32022"
        )

    def switch_version(self, session: Session, exc: ServerError, *, probe: bool) -> None:
        """Take the newest version of ours that a ``-32022`` error's ``data.supported``
        lists."""
        protocol = session.options.protocol
        data = exc.data if isinstance(exc.data, dict) else {}
        raw = data.get("supported")
        supported = [v for v in raw if isinstance(v, str)] if isinstance(raw, list) else []
        for version in protocol.protocol_versions:
            if version in supported:
                session.version = version
                return
        if probe and any(v in protocol.legacy_versions for v in supported):
            raise NotModern(f"the server supports only {supported}") from None
        raise VersionNegotiationError(
            f"the server supports protocol versions {supported}, this client "
            f"{list(protocol.protocol_versions)}"
        ) from None

    def _discovered(self, session: Session, result: dict[str, Any], *, probe: bool) -> ServerInfo:
        protocol = session.options.protocol
        raw = result.get("supportedVersions")
        versions = [v for v in raw if isinstance(v, str)] if isinstance(raw, list) else []
        if versions and session.version not in versions:
            common = [v for v in protocol.protocol_versions if v in versions]
            if common:
                session.version = common[0]
            elif probe and any(v in protocol.legacy_versions for v in versions):
                raise NotModern(f"server/discover lists only {versions}")
            else:
                raise VersionNegotiationError(
                    f"the server supports protocol versions {versions}, this client "
                    f"{list(protocol.protocol_versions)}"
                )
        meta = result.get("_meta")
        identity = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        if not isinstance(identity, dict):
            identity = result.get("serverInfo")  # RC-era servers put it at the top level
        return _server_info(self.name, session.version, result, identity, tuple(versions))

    def frame(
        self, session: Session, caller_meta: Mapping[str, Any] | None, token: str | None
    ) -> dict[str, Any]:
        own = session.meta(token)  # a fresh dict; the caller's _meta goes first
        return {**caller_meta, **own} if caller_meta else own

    def notify_headers(self, session: Session, method: str) -> dict[str, str] | None:
        return {"MCP-Protocol-Version": session.version, "Mcp-Method": method}

    async def recover(
        self, session: Session, failure: Exception, generation: int, attempt: int
    ) -> bool:
        if (
            not isinstance(failure, ServerError)
            or failure.code != UNSUPPORTED_PROTOCOL_VERSION
            or attempt >= 2
        ):
            return False
        self.switch_version(session, failure, probe=False)
        return True


class LegacyEra(EraRules):
    """2025-11-25 and before: ``initialize`` opens a session that holds the state."""

    name = "legacy"
    declares_tasks = False
    param_headers = False

    async def start(self, session: Session, version: str | None = None) -> None:
        """``initialize`` with our newest legacy version (a remembered one is not needed:
        the server answers with its own), then ``notifications/initialized``."""
        protocol = session.options.protocol
        session.rules = self
        params = {
            "protocolVersion": protocol.legacy_versions[0],
            "capabilities": session.capabilities(),
            "clientInfo": dict(protocol.client_info),
        }
        result = await session.handshake(
            "initialize", lambda: params, session.options.timeouts.timeout
        )
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in protocol.legacy_versions:
            raise VersionNegotiationError(
                f"the server answered initialize with protocol version {version!r}; this "
                f"client speaks {list(protocol.legacy_versions)}"
            )
        session.version = version
        info = session.info = _server_info(
            self.name, version, result, result.get("serverInfo"), (version,)
        )
        await session.transport.notify(
            "notifications/initialized", headers={"MCP-Protocol-Version": version}
        )
        await session.transport.legacy_session_started(version)
        if session.log_level is not None and info.supports("logging"):
            await session.request("logging/setLevel", {"level": session.log_level})

    def frame(
        self, session: Session, caller_meta: Mapping[str, Any] | None, token: str | None
    ) -> dict[str, Any]:
        own = dict(caller_meta or {})
        if token is not None:
            own["progressToken"] = token
        return own

    def notify_headers(self, session: Session, method: str) -> dict[str, str] | None:
        return None

    async def recover(
        self, session: Session, failure: Exception, generation: int, attempt: int
    ) -> bool:
        if not isinstance(failure, SessionExpiredError) or attempt >= 1:
            return False
        await session.reinitialize(generation)
        return True


def _server_info(
    era: Era, version: str, result: dict[str, Any], identity: Any, versions: tuple[str, ...]
) -> ServerInfo:
    caps = result.get("capabilities")
    instructions = result.get("instructions")
    return ServerInfo(
        era,
        version,
        capabilities=caps if isinstance(caps, dict) else {},
        implementation=identity if isinstance(identity, dict) else {},
        instructions=instructions if isinstance(instructions, str) else None,
        supported_versions=versions,
    )


MODERN: Final = ModernEra()
LEGACY: Final = LegacyEra()
#: Every era by name (what the era cache remembers).
ERAS: Final[dict[str, EraRules]] = {MODERN.name: MODERN, LEGACY.name: LEGACY}


def pinned(choice: EraChoice, transport_kind: str) -> EraRules | None:
    """The era a connection must speak given the user's ``era=`` choice, or None to probe
    (``"auto"``).  HTTP+SSE (2024-11-05) predates 2026-07-28, so it is always legacy."""
    if transport_kind == "sse":
        if choice == "modern":
            raise VersionNegotiationError(
                "era='modern' cannot be spoken over the 2024-11-05 HTTP+SSE "
                "transport, which carries only the initialize handshake era"
            )
        return LEGACY
    return ERAS.get(choice)


def sse_fallback_allowed(choice: EraChoice) -> bool:
    """A refused Streamable HTTP ``initialize`` may be retried as HTTP+SSE, a legacy-only
    transport, unless the user pinned the modern era."""
    return pinned(choice, "http") is not MODERN


def remembered(choice: EraChoice) -> bool:
    """Only a negotiated era is worth remembering; a pinned one was not learned."""
    return pinned(choice, "http") is None
