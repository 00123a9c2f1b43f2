"""The client side of a JSON-RPC line stream, shared by stdio and the in-memory transport.

Both talk to the server through one :class:`~mcpkit.runtime.endpoint.Endpoint` over a byte
stream (a child process's pipes, or a pair of anyio memory streams); they differ only in
how the stream is opened and closed and in what explains its failure (an exit status and
stderr for a process).  Everything else lives here once: routing server notifications to
``subscriptions/listen`` streams by ``_meta.subscriptionId``, answering server->client
requests through the client's handler, turning endpoint failures into client errors, and
ending a listen stream by cancelling its request (``notifications/cancelled``).

Subclasses set :attr:`_endpoint` while open and may override :meth:`_closed_detail` and
:meth:`_timeout_detail` to say more about a failure.  A subclass's writer signals a broken
stream with ``anyio.BrokenResourceError`` (the endpoint then drops replies quietly, and a
request gets a :class:`ConnectionClosedError` with :meth:`_closed_detail`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, Unpack

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from ..runtime.endpoint import Endpoint
from ..runtime.pending import EndpointClosed, RequestTimeout
from ..types.errors import McpError, method_not_found
from ..types.jsonrpc import Message, RequestId
from ..types.versions import META_SUBSCRIPTION_ID
from .client_base import (
    ConnectionClosedError,
    InboundNotificationHandler,
    InboundRequestHandler,
    MessageStream,
    RequestTimeoutError,
    SendOptions,
    ServerError,
    message_stream,
)

log = logging.getLogger("mcpkit.client.stream")

_LISTEN_BUFFER = 1024


class EndpointSendOptions(SendOptions, total=False):
    """:class:`SendOptions`, and the ``request_id`` to use (default: the endpoint's next;
    ``listen`` picks its own first, to route the stream's messages by it)."""

    request_id: RequestId | None


class EndpointClientTransport:
    """Client requests, notifications and listen streams over one :class:`Endpoint`."""

    def __init__(self) -> None:
        self._endpoint: Endpoint | None = None
        self._on_request: InboundRequestHandler | None = None
        self._on_notification: InboundNotificationHandler | None = None
        self._listeners: dict[RequestId, MemoryObjectSendStream[Message]] = {}
        self._tg: TaskGroup | None = None

    # ------------------------------------------------------------------ lifecycle
    async def _open(self, endpoint: Endpoint) -> TaskGroup:
        """Carry our messages over ``endpoint`` from now on; the task group returned (for
        the reader tasks) is entered here and exited by :meth:`__aexit__`, in the same
        task and scope as anyio requires."""
        endpoint.reply_to_invalid = False  # a server's junk is logged, never answered
        endpoint.explain = self._explain
        self._endpoint = endpoint
        tg = self._tg = anyio.create_task_group()
        await tg.__aenter__()
        return tg

    async def __aexit__(self, *exc: object) -> bool | None:
        tg, self._tg = self._tg, None
        if tg is None:
            return None
        with anyio.CancelScope(shield=True):
            await self._shutdown()
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)
        return None

    async def _shutdown(self) -> None:
        """Close the connection (shielded, before the reader tasks are cancelled): by
        default the endpoint fails whatever is still pending."""
        if self._endpoint is not None:
            self._endpoint.close("the client closed the connection")

    # ------------------------------------------------------------------ hooks
    async def _closed_detail(self, doing: str) -> str:
        """Why the stream is closed, for a :class:`ConnectionClosedError`."""
        return f"the server closed the connection while {doing}"

    def _timeout_detail(self) -> str:
        """Facts that may explain a timeout (e.g. junk a server printed)."""
        return ""

    # ------------------------------------------------------------------ inbound
    def set_handlers(
        self, on_request: InboundRequestHandler, on_notification: InboundNotificationHandler
    ) -> None:
        self._on_request = on_request
        self._on_notification = on_notification

    async def _serve_request(self, message: Message, endpoint: Endpoint) -> dict[str, Any] | None:
        if self._on_request is None:
            raise method_not_found(str(message.get("method")))
        return await self._on_request(message)

    async def _notification(self, message: Message, endpoint: Endpoint) -> None:
        method = message["method"]
        if method == "notifications/progress":
            return  # the endpoint delivered it to the pending request (or it is stale)
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        sub_id = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if method == "notifications/cancelled" and params.get("requestId") in self._listeners:
            # The server ended a listen stream (stdio's way to do it).
            send = self._listeners.pop(params["requestId"])
            send.close()
            return
        if sub_id is not None and not isinstance(sub_id, bool) and sub_id in self._listeners:
            try:
                self._listeners[sub_id].send_nowait(message)
            except anyio.WouldBlock:
                log.warning("listen stream %r is not being read; dropped %s", sub_id, method)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            return
        if self._on_notification is not None:
            await self._on_notification(message)

    # ------------------------------------------------------------------ outbound
    def _require(self) -> Endpoint:
        if self._endpoint is None:
            raise RuntimeError(f"{type(self).__name__} used outside 'async with'")
        return self._endpoint

    def request(
        self, method: str, params: dict[str, Any] | None, **options: Unpack[EndpointSendOptions]
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        # The endpoint's own coroutine, no wrapper of ours per call: it puts its failures
        # into our words through :meth:`_explain` (set as its ``explain`` by :meth:`_open`).
        return self._require().request(
            method,
            params,
            timeout=options["timeout"],
            max_timeout=options.get("max_timeout"),
            request_id=options.get("request_id"),
            on_progress=options.get("on_progress"),
        )

    async def _explain(
        self,
        exc: Exception,
        method: str,
        timeout: float | None,
        max_timeout: float | None,
        elapsed: float,
    ) -> BaseException:
        """The client error for a request's failure on the endpoint (its ``explain``)."""
        if isinstance(exc, EndpointClosed):
            doing = f"sending {method}" if exc.unsent else f"{method} was pending"
            return ConnectionClosedError(await self._closed_detail(doing))
        if not isinstance(exc, McpError):
            # A write failed: the subclass's writer broke the stream (and recorded why).
            return ConnectionClosedError(await self._closed_detail(f"sending {method}"))
        if isinstance(exc, RequestTimeout):
            hard = (
                max_timeout is not None
                and timeout is not None
                and max_timeout > timeout
                and elapsed >= max_timeout - 0.05
            )
            return RequestTimeoutError(
                method,
                (max_timeout if hard else timeout) or elapsed,
                hard=hard,
                detail=self._timeout_detail(),
            )
        return ServerError(exc.code, exc.message, exc.data, method=method)

    async def notify(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        endpoint = self._require()
        if endpoint.closed is not None:
            raise ConnectionClosedError(await self._closed_detail(f"sending {method}"))
        try:
            await endpoint.notify(method, params)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise ConnectionClosedError(await self._closed_detail(f"sending {method}")) from None

    @asynccontextmanager
    async def listen(
        self, params: dict[str, Any], *, headers: dict[str, str] | None = None
    ) -> AsyncIterator[MessageStream]:
        """Messages of one ``subscriptions/listen`` (routed by ``_meta.subscriptionId``)."""
        endpoint = self._require()
        listen_id = endpoint.outgoing.next_id()
        send, stream = message_stream(_LISTEN_BUFFER)
        self._listeners[listen_id] = send

        async def run() -> None:
            with send:
                try:
                    result = await self.request(
                        "subscriptions/listen", params, timeout=None, request_id=listen_id
                    )
                    await send.send({"jsonrpc": "2.0", "id": listen_id, "result": result})
                except ServerError as exc:
                    stream.error = exc
                except ConnectionClosedError as exc:
                    stream.error = exc
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                finally:
                    self._listeners.pop(listen_id, None)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                yield stream
            finally:
                tg.cancel_scope.cancel()  # -> notifications/cancelled for the listen id

    async def legacy_session_started(self, version: str) -> None:
        return None


__all__ = ["EndpointClientTransport"]
