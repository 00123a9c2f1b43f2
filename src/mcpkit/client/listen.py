"""``subscriptions/listen``: change notifications as an async iterator.

Modern era: one long-lived request whose first message must be
``notifications/subscriptions/acknowledged`` carrying the filter the server actually
honours (exposed as :attr:`Subscription.filter`); then list-changed and resource-updated
notifications; a graceful end is the listen result (HTTP) or ``notifications/cancelled``
(stdio).  Leaving the ``async with`` cancels it (closes the stream / sends
``notifications/cancelled``).  An abrupt end raises :class:`ConnectionClosedError` from the
iteration, so the application knows to listen again.

Legacy era: the same interface over the session's own notifications (stdio, or the HTTP GET
stream), with ``resources/subscribe``/``unsubscribe`` for the requested URIs; the
"acknowledged" filter is what the server's capabilities allow.

Notifications invalidate the client's result cache as they arrive, whether or not the
application reads them yet (a pump task forwards them into a bounded buffer).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from ..transports.client_base import ItemStream, MessageStream, ServerError, item_stream
from .errors import InvalidResultError
from .models import Notification

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("mcpkit.client.listen")

_BUFFER = 256
_FLAG_METHODS = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}
_FLAG_CAPS = {
    "toolsListChanged": "tools.listChanged",
    "promptsListChanged": "prompts.listChanged",
    "resourcesListChanged": "resources.listChanged",
}


def build_filter(
    tools: bool, prompts: bool, resources: bool, resource_uris: Sequence[str]
) -> dict[str, Any]:
    asked = {
        "toolsListChanged": tools,
        "promptsListChanged": prompts,
        "resourcesListChanged": resources,
    }
    wanted: dict[str, Any] = {flag: True for flag, on in asked.items() if on}
    if resource_uris:
        wanted["resourceSubscriptions"] = list(resource_uris)
    return wanted


class Subscription:
    """An open listen; use ``async with client.listen(...) as sub: async for n in sub``."""

    def __init__(self, client: Client, wanted: dict[str, Any]) -> None:
        self._client = client
        self.requested = wanted
        #: The filter the server acknowledged (what it will actually send).
        self.filter: dict[str, Any] = {}
        #: Why the stream ended (None while open).
        self.ended: str | None = None
        self.dropped = 0
        self._stack = contextlib.AsyncExitStack()
        self._stream: ItemStream[Notification] | None = None
        self._legacy_send: MemoryObjectSendStream[Notification] | None = None

    async def __aenter__(self) -> Subscription:
        try:
            if self._client._has("subscriptions/listen"):  # else session notifications
                await self._open_modern()
            else:
                await self._open_legacy()
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        # Not shielded as a whole: the stack holds a task group, which must be exited in
        # the scope it was entered in (the unsubscribe calls bound themselves).
        await self._stack.aclose()
        if self.ended is None:
            self.ended = "closed by the client"

    # ------------------------------------------------------------------ modern
    async def _open_modern(self) -> None:
        session = self._client.session
        params = {"notifications": self.requested, "_meta": session.meta()}
        source = await self._stack.enter_async_context(session.transport.listen(params))
        # Exit order (LIFO): stop the pump, then close the transport's stream.
        tg: TaskGroup = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)
        timeout = self._client.options.timeouts.timeout
        with anyio.fail_after(timeout) if timeout else contextlib.nullcontext():
            try:
                first = await source.__anext__()
            except StopAsyncIteration:
                raise InvalidResultError(
                    "the listen stream ended before its acknowledgement"
                ) from None
        pending: list[dict[str, Any]] = []
        if "error" in first:
            raise ServerError.from_wire(first["error"], method="subscriptions/listen")
        if first.get("method") == "notifications/subscriptions/acknowledged":
            honoured = (first.get("params") or {}).get("notifications")
            self.filter = honoured if isinstance(honoured, dict) else {}
        else:
            log.warning(
                "listen stream did not start with an acknowledgement: %s",
                first.get("method") or "a result",
            )
            pending.append(first)
        send, self._stream = item_stream(Notification, _BUFFER)
        self._stack.callback(self._stream.close)
        tg.start_soon(self._pump, source, send, pending)

    async def _pump(
        self,
        source: MessageStream,
        send: MemoryObjectSendStream[Notification],
        pending: list[dict[str, Any]],
    ) -> None:
        with send:
            try:
                for message in pending:
                    if not await self._deliver(message, send):
                        return
                async for message in source:
                    if not await self._deliver(message, send):
                        return
                self.ended = "ended by the server"
            except Exception as exc:  # ClientError from the transport: surface it
                self._fail(exc)
                self.ended = f"failed: {exc}"

    async def _deliver(
        self, message: dict[str, Any], send: MemoryObjectSendStream[Notification]
    ) -> bool:
        if "method" not in message:
            if "error" in message:
                self._fail(ServerError.from_wire(message["error"], method="subscriptions/listen"))
            self.ended = "ended by the server"
            return False
        params = message.get("params")
        note = Notification(message["method"], params if isinstance(params, dict) else {})
        self._client._observe(note)
        await send.send(note)
        return True

    # ------------------------------------------------------------------ legacy
    async def _open_legacy(self) -> None:
        client = self._client
        info = client.server_info
        honoured: dict[str, Any] = {}
        for flag, capability in _FLAG_CAPS.items():
            if self.requested.get(flag) and info.supports(capability):
                honoured[flag] = True
        uris = [u for u in self.requested.get("resourceSubscriptions") or [] if isinstance(u, str)]
        if uris and info.supports("resources.subscribe"):
            honoured["resourceSubscriptions"] = uris
        self.filter = honoured
        send, self._stream = item_stream(Notification, _BUFFER)
        self._legacy_send = send
        client._legacy_listeners.add(self)
        self._stack.callback(client._legacy_listeners.discard, self)
        self._stack.callback(send.close)
        for uri in honoured.get("resourceSubscriptions", []):
            await client.subscribe_resource(uri)
            self._stack.push_async_callback(self._unsubscribe, uri)

    async def _unsubscribe(self, uri: str) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(2), contextlib.suppress(Exception):
            await self._client.unsubscribe_resource(uri)

    def offer(self, note: Notification) -> None:
        """Legacy fan-out: take a session notification if the filter wants it."""
        wanted = any(_FLAG_METHODS[f] == note.method for f in self.filter if f in _FLAG_METHODS)
        if note.method == "notifications/resources/updated":
            wanted = note.uri in (self.filter.get("resourceSubscriptions") or ())
        if not wanted or self._legacy_send is None:
            return
        try:
            self._legacy_send.send_nowait(note)
        except anyio.WouldBlock:
            self.dropped += 1
            log.warning("listen buffer full; dropped %s", note.method)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    # ------------------------------------------------------------------ iteration
    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Notification:
        if self._stream is None:
            raise RuntimeError("use 'async with client.listen(...) as sub' before iterating")
        return await self._stream.__anext__()

    def _fail(self, error: BaseException) -> None:
        """The stream ended abnormally: iteration raises ``error`` once the buffer is read."""
        if self._stream is not None:
            self._stream.error = error
