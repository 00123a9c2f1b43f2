"""Legacy (<= 2025-11-25) session semantics, shared by the stdio and HTTP transports.

A :class:`LegacySession` holds what the handshake negotiated (version, client
capabilities), the logging level, resource subscriptions and the lifecycle state.  It
answers the legacy-only methods itself and hands the rest to the server's dispatcher.
"""

from __future__ import annotations

import functools
import secrets
import time
import weakref
from collections.abc import Awaitable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol.lifecycle import LIFECYCLE_METHODS, Event, Lifecycle, SessionState, event_for
from ..protocol.negotiation import (
    RequestMeta,
    check_initialize_params,
    legacy_progress_token,
    negotiate_legacy_version,
)
from ..types.errors import invalid_params
from ..types.jsonrpc import Message
from ..types.versions import LATEST_LEGACY, LOG_LEVEL_RANK
from .exchange import Exchange

if TYPE_CHECKING:
    from .contracts import LegacyHost


_READY = SessionState.READY
#: Methods the session answers itself, or that are lifecycle events of their own (every
#: other request leaves a READY session READY).
_SESSION_METHODS = LIFECYCLE_METHODS | {
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
}


class LegacySession:
    __slots__ = (
        "client_capabilities",
        "client_info",
        "created",
        "id",
        "last_active",
        "lifecycle",
        "log_level",
        "principal",
        "protocol_version",
        "subscriptions",
    )

    def __init__(self, session_id: str | None = None, principal: object = None) -> None:
        self.id = session_id or secrets.token_urlsafe(24)
        self.lifecycle = Lifecycle()
        self.protocol_version: str = LATEST_LEGACY
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self.created = self.last_active = time.monotonic()
        self.principal = principal

    @property
    def initialized(self) -> bool:
        return self.lifecycle.state in (SessionState.INITIALIZING, SessionState.READY)

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def meta_for(self, params: dict[str, Any] | None) -> RequestMeta:
        # Positional (field order: era, version, capabilities, info, log level, progress
        # token): a dataclass called with keywords builds a kwargs dict per request.
        return RequestMeta(
            "legacy",
            self.protocol_version,
            self.client_capabilities,
            self.client_info,
            None,
            legacy_progress_token(params) if params and "_meta" in params else None,
        )

    def on_notification(self, message: Message) -> None:
        method = message.get("method", "")
        if self.lifecycle.can(event_for(method, False)):
            self.lifecycle.advance(event_for(method, False))

    def handle_request(
        self, server: LegacyHost, message: Message, exchange: Exchange
    ) -> Awaitable[dict[str, Any]]:
        """Answer one request of this session (the awaitable raises :class:`McpError`).

        Not a coroutine itself: nearly every request (READY stays READY, nothing for the
        session to answer) is the server's dispatch coroutine, handed back as it is."""
        method: str = message["method"]
        params = message.get("params") or {}
        if self.lifecycle.state is _READY and method not in _SESSION_METHODS:
            self.last_active = time.monotonic()
            return server.dispatch(
                message, self.meta_for(params), exchange, session=self, principal=self.principal
            )
        return self._session_request(server, message, method, params, exchange)

    async def _session_request(
        self,
        server: LegacyHost,
        message: Message,
        method: str,
        params: dict[str, Any],
        exchange: Exchange,
    ) -> dict[str, Any]:
        """A request the lifecycle decides on or the session answers itself.  The
        lifecycle is checked here; the answer still goes through the server's dispatch
        (``local=``), so middleware sees ``initialize``, ``ping`` and the rest too."""
        self.touch()
        event = event_for(method, True)
        if not self.lifecycle.can(event):
            self.lifecycle.advance(event)  # raises the right -32600
        if method != "initialize":
            self.lifecycle.advance(event)
        local = None
        if method in _SESSION_METHODS:
            local = functools.partial(self._answer, server, method, params, event)
        return await server.dispatch(
            message,
            self.meta_for(params),
            exchange,
            session=self,
            principal=self.principal,
            local=local,
        )

    async def _answer(
        self, server: LegacyHost, method: str, params: dict[str, Any], event: Event, ctx: Any
    ) -> dict[str, Any]:
        """The session's own answer to a session method (``ctx``: the request context
        dispatch made; the answer depends only on the session)."""
        if method == "initialize":
            result = self._initialize(server, params)
            self.lifecycle.advance(event)
            return result
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVEL_RANK:
                raise invalid_params(f"Invalid log level: {level!r}")
            self.log_level = level
            return {}
        if method in ("resources/subscribe", "resources/unsubscribe"):
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise invalid_params("uri must be a string")
            subscribe = method == "resources/subscribe"
            if subscribe != (uri in self.subscriptions):
                bus = getattr(server, "bus", None)  # a relaying server subscribes upstream
                if bus is not None:
                    bus.want((uri,), subscribe)
            if subscribe:
                self.subscriptions.add(uri)
            else:
                self.subscriptions.discard(uri)
            return {}
        return {}  # ping, and any other lifecycle method with nothing to say

    def _initialize(self, server: LegacyHost, params: dict[str, Any]) -> dict[str, Any]:
        requested, caps, info = check_initialize_params(params)
        self.protocol_version = negotiate_legacy_version(requested, server.legacy_versions)
        self.client_capabilities = caps
        self.client_info = info
        result: dict[str, Any] = {
            "protocolVersion": self.protocol_version,
            "capabilities": server.capabilities(era="legacy"),
            "serverInfo": server.info,
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return result

    def close(self) -> None:
        self.lifecycle.advance(Event.CLOSE)

    def snapshot(self) -> dict[str, Any]:
        """What another process needs to continue this session (JSON-safe)."""
        return {
            "id": self.id,
            "state": self.lifecycle.state.value,
            "version": self.protocol_version,
            "caps": self.client_capabilities,
            "info": self.client_info,
            "level": self.log_level,
            "subs": sorted(self.subscriptions),
            "principal": None if self.principal is None else str(self.principal),
        }

    @classmethod
    def restore(cls, data: dict[str, Any], into: LegacySession | None = None) -> LegacySession:
        session = into if into is not None else cls(data["id"], data.get("principal"))
        session.lifecycle.state = SessionState(data["state"])
        session.protocol_version = data["version"]
        session.client_capabilities = data.get("caps") or {}
        session.client_info = data.get("info")
        session.log_level = data.get("level")
        session.subscriptions = set(data.get("subs") or ())
        return session


class SessionHolder(Protocol):
    def live_legacy_sessions(self) -> Iterable[LegacySession]: ...


#: What holds live legacy sessions in this process (each HTTP app's session store, each
#: stdio server), for the sessions gauge of the telemetry middleware, which reads it only
#: when metrics are collected.  Weak: a holder that is gone stops counting.
SESSION_HOLDERS: weakref.WeakSet[SessionHolder] = weakref.WeakSet()


def live_legacy_sessions() -> Iterator[LegacySession]:
    """Every initialized legacy session of this process (see :data:`SESSION_HOLDERS`)."""
    for holder in list(SESSION_HOLDERS):
        for session in holder.live_legacy_sessions():
            if session.initialized:
                yield session
