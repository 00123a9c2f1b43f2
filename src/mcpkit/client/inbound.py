"""What a server sends a client unasked: notifications and (2025-11-25) requests.

Mixed into :class:`~mcpkit.client.Client`: log messages go to the ``on_log`` callback or
the ``mcpkit.client.server`` logger, change notifications invalidate the TTL cache and reach
legacy-session subscriptions and ``on_notification``; a legacy server's ``elicitation``,
``sampling`` and ``roots`` requests are answered by the same callbacks as MRTR input
requests (2026-07-28), so an application writes each answer once for both eras.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..types.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, McpError
from ..types.jsonrpc import Message, params_of
from .callbacks import Callbacks, call_maybe_async
from .errors import InputRequestError
from .models import Notification
from .url_elicitation import UrlCompletions

if TYPE_CHECKING:
    from ..transports.client_base import ClientTransport
    from .cache import ResultCache
    from .listen import Subscription

__all__ = ["InboundHandling"]

server_log = logging.getLogger("mcpkit.client.server")

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_SERVER_REQUESTS = ("elicitation/create", "sampling/createMessage", "roots/list")


class InboundHandling:
    """The client's answers to what its server sends unasked (see the module docstring)."""

    callbacks: Callbacks
    cache: ResultCache | None
    transport: ClientTransport
    _legacy_listeners: set[Subscription]
    _url_completions: UrlCompletions

    @property
    def url_completions(self) -> UrlCompletions:
        """The URL elicitations this client has seen completed (2025-11-25), and how long
        a request answered ``-32042`` waits for one (``.timeout``)."""
        try:
            return self._url_completions
        except AttributeError:
            self._url_completions = UrlCompletions()
            return self._url_completions

    def _observe(self, note: Notification) -> None:
        """A change notification arrived (listen stream or legacy session)."""
        if self.cache is not None:
            self.cache.on_notification(self.transport.server_key, note.method, note.params)

    async def _on_notification(self, message: Message) -> None:
        note = Notification(message["method"], params_of(message))
        if note.method == "notifications/message":
            if self.callbacks.on_log is not None:
                await call_maybe_async(self.callbacks.on_log, note.params)
            else:
                level = _LOG_LEVELS.get(str(note.params.get("level")), logging.CRITICAL)
                server_log.log(level, "%s", note.params.get("data"))
            return
        if note.method == "notifications/elicitation/complete":
            eid = note.params.get("elicitationId")
            if isinstance(eid, str):
                self.url_completions.complete(eid)
        self._observe(note)
        for subscription in list(self._legacy_listeners):
            subscription.offer(note)
        if self.callbacks.on_notification is not None:
            await call_maybe_async(self.callbacks.on_notification, note)

    async def _on_request(self, message: Message) -> dict[str, Any]:
        """A legacy server->client request: the same callbacks as MRTR input requests."""
        method = message["method"]
        if method == "ping":
            return {}
        if method not in _SERVER_REQUESTS:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        try:
            return await self.callbacks.answer(method, params_of(message))
        except InputRequestError as exc:
            raise McpError(METHOD_NOT_FOUND if exc.missing else INTERNAL_ERROR, str(exc)) from None
