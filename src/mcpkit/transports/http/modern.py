"""2026-07-28 Streamable HTTP: one stateless POST per request.

Order of checks (the conformance suite's, which follows the spec's text): the
``MCP-Protocol-Version`` header must be present (-32020); ``_meta`` must carry the
version and client capabilities (-32602); header and ``_meta`` must agree (-32020); the
version must be one we serve (-32022); ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*`` must
match the body (-32020); then the method must exist (-32601, HTTP 404).  Closing the
response stream cancels the handler.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import anyio

from ...protocol import headers as hdr
from ...protocol.negotiation import RequestMeta, check_modern_version, parse_modern_meta
from ...runtime.contracts import called_tool
from ...runtime.listen import ServedSubscription
from ...runtime.runner import Handle, on_asyncio, run
from ...types import jsonrpc
from ...types.errors import INVALID_REQUEST, McpError, header_mismatch, method_not_found
from ...types.methods import METHODS
from .asgi import HttpExchange, Receive, Send, client_gone, send_empty, send_error
from .stream import ResponseWriter, StreamSink, send_json_answer

if TYPE_CHECKING:
    from .app import McpHttpApp


class ModernExchange(HttpExchange):
    """One modern POST's way back to the client.  The response writer is made only when
    the handler sends something before its result (most answer with the result alone,
    as one JSON body: :meth:`answer`)."""

    __slots__ = ("_writer", "accept", "headers", "send")

    def __init__(self, send: Send, headers: dict[str, str]) -> None:
        self.send = send
        self.headers = headers
        # The request's Accept header: may the answer be a stream?
        self.accept = headers.get("accept", "text/event-stream")
        self._writer: ResponseWriter | None = None

    @property
    def writer(self) -> ResponseWriter:
        writer = self._writer
        if writer is None:
            writer = self._writer = ResponseWriter(self.send, "text/event-stream" in self.accept)
        return writer

    async def answer(
        self,
        message: dict[str, Any],
        status: int,
        headers: list[tuple[bytes, bytes]] | None,
    ) -> None:
        """The final response: plain JSON unless a stream was started."""
        if self._writer is None:
            self._writer = _ANSWERED  # anything sent later is dropped, as after final()
            await send_json_answer(self.send, message, status, headers)
        else:
            await self._writer.final(message, status, headers)


#: The writer of an exchange answered without one: done, so it sends nothing more.
_ANSWERED = ResponseWriter(None, False)  # type: ignore[arg-type]
_ANSWERED._done = True


async def handle_modern(
    app: McpHttpApp,
    message: dict[str, Any],
    kind: jsonrpc.Kind,
    headers: dict[str, str],
    receive: Receive,
    send: Send,
    principal: object,
) -> None:
    """Answer one 2026-07-28 POST (through the request runner: a client that goes away
    while the handler waits cancels it, and nobody is answered)."""
    if kind is jsonrpc.Kind.NOTIFICATION:
        # Clients may POST notifications/cancelled; nothing else is defined. Accept.
        await app.server.dispatch_notification(message, principal=principal)
        await send_empty(send, 202)
        return
    if kind is not jsonrpc.Kind.REQUEST:
        failure = McpError(INVALID_REQUEST, "Servers of 2026-07-28 send no requests to answer")
        await send_error(send, 400, failure)
        return
    request_id = message["id"]
    params = message.get("params")
    try:
        version = headers.get(hdr.PROTOCOL_VERSION)
        if version is None:
            raise header_mismatch("missing MCP-Protocol-Version header")
        meta = parse_modern_meta(params, supported=None)
        if meta.protocol_version != version:
            raise header_mismatch(
                f"MCP-Protocol-Version header {version!r} does not match "
                f"_meta {meta.protocol_version!r}"
            )
        check_modern_version(version, app.server.modern_versions)
        method: str = message["method"]
        spec = METHODS.get(method) or app.server.custom_specs.get(method)
        tool = called_tool(app.server, message)
        tool_headers: tuple[hdr.HeaderParam, ...] = () if tool is None else tool.header_params
        # validate_request_headers minus the version check just made (params: a dict or
        # None, as classify() ensured).
        member = spec.name_param if spec is not None else None
        hdr.check_request_headers(headers, method, params, member, tool_headers)
        if spec is None or "modern" not in spec.eras or spec.direction == "server_to_client":
            raise method_not_found(method)
    except McpError as err:
        await send_error(send, err.http_status, err, request_id)
        return

    exchange = ModernExchange(send, headers)
    if method == "subscriptions/listen":
        await _listen(app, message, exchange.writer, receive, principal)
        return
    answer = await _answer(app, message, meta, exchange, receive, principal)
    if answer is not None:  # None: the client went away and the handler was cancelled
        await exchange.answer(*answer)


async def _answer(
    app: McpHttpApp,
    message: dict[str, Any],
    meta: RequestMeta,
    exchange: ModernExchange,
    receive: Receive,
    principal: object,
) -> tuple[dict[str, Any], int, list[tuple[bytes, bytes]] | None] | None:
    """The response message, HTTP status and extra headers for one modern request, or
    None when the client went away and the handler was cancelled.  Only a handler that
    waits is watched for that (:func:`_watching`); most finish in their first step."""
    request_id = message["id"]
    server = app.server
    try:
        outcome = run(
            server.dispatch(message, meta, exchange, principal=principal),
            None,
            lambda handle: _watching(app, receive, handle),
            suspends=server.calls_wait,
        )
        if not isinstance(outcome, tuple):
            outcome = await outcome
        finished, value = outcome
    except McpError as err:
        return jsonrpc.error(request_id, err), err.http_status, err.http_headers
    if not finished or value is None:
        return None
    return jsonrpc.result(request_id, value), 200, None


#: How long a waiting handler runs before a watcher looks for its client going away: a
#: client that leaves sooner is noticed this much later, never missed.
WATCH_AFTER_S = 0.05


def _watching(
    app: McpHttpApp, receive: Receive, handle: Handle
) -> contextlib.AbstractContextManager[None]:
    """While a handler waits: cancel ``handle`` if the client goes away.  On asyncio the
    app's one timer looks at the calls that wait (:class:`WaitingCalls`); elsewhere a
    watcher runs in the server's task group."""
    if on_asyncio():
        return _Waiting(app.waiting_calls, receive, handle)
    return _watched_by_task(app, receive, handle)


class _Waiting:
    """A call registered with the app's timer while its handler waits (a plain context
    manager: entered by every forwarded or waiting call)."""

    __slots__ = ("_calls", "_watch")

    def __init__(self, calls: WaitingCalls, receive: Receive, handle: Handle) -> None:
        self._calls = calls
        self._watch = calls.enter(receive, handle)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        self._calls.leave(self._watch)


@contextlib.contextmanager
def _watched_by_task(app: McpHttpApp, receive: Receive, handle: Handle) -> Iterator[None]:
    stop = anyio.CancelScope()
    if app.server.can_spawn:
        app.server.spawn(lambda: _cancel_when_gone(receive, handle, stop))
    try:
        yield
    finally:
        stop.cancel()


class _Watch:
    """One waiting call: its handle, its ``receive``, since when it waits, and its watcher
    task once it has one."""

    __slots__ = ("handle", "receive", "since", "watcher")

    def __init__(self, receive: Receive, handle: Handle, since: float) -> None:
        self.handle = handle
        self.receive = receive
        self.since = since
        self.watcher: asyncio.Task[None] | None = None


class WaitingCalls:
    """An app's calls that wait, looked at by one timer while there are any: a call still
    waiting :data:`WATCH_AFTER_S` after it started gets its watcher task at the next tick
    (so after 1 to 1.5 times that), never sooner.  Every forwarded gateway call waits,
    most of them briefly: a watcher or a timer per call would cost more than the sweep."""

    __slots__ = ("_calls", "_handle", "_loop")

    def __init__(self) -> None:
        self._calls: dict[_Watch, None] = {}  # (an ordered set: oldest first)
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def enter(self, receive: Receive, handle: Handle) -> _Watch:
        """A call that waits, from now; :meth:`leave` it when it ends."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # (another loop: tests, restarts)
            self._calls, self._loop, self._handle = {}, loop, None
        watch = _Watch(receive, handle, loop.time())
        if self._handle is None:
            self._handle = loop.call_later(WATCH_AFTER_S / 2, self._sweep)
        self._calls[watch] = None
        return watch

    def leave(self, watch: _Watch) -> None:
        """The call ended: no longer looked at, and its watcher (if any) stopped."""
        self._calls.pop(watch, None)
        if watch.watcher is not None:
            watch.watcher.cancel()

    def _sweep(self) -> None:
        loop = self._loop
        assert loop is not None
        due = loop.time() - WATCH_AFTER_S
        for watch in self._calls:
            if watch.since > due:
                break  # (entered in order: the rest are younger)
            if watch.watcher is None:
                watch.watcher = loop.create_task(_cancel_when_gone(watch.receive, watch.handle))
        self._handle = loop.call_later(WATCH_AFTER_S / 2, self._sweep) if self._calls else None


async def _cancel_when_gone(
    receive: Receive, handle: Handle, stop: anyio.CancelScope | None = None
) -> None:
    """Cancel ``handle`` if the client disconnects before the call ends (which cancels
    ``stop``, or this task when there is no ``stop``)."""
    with stop or contextlib.nullcontext(), contextlib.suppress(Exception):
        await client_gone(receive)
        if stop is None or not stop.cancel_called:
            handle.cancel()


async def _listen(
    app: McpHttpApp,
    message: dict[str, Any],
    writer: ResponseWriter,
    receive: Receive,
    principal: object,
) -> None:
    """Hold a listen stream open: acknowledgement first, then matching change events,
    keep-alive comments while idle; ends when the client disconnects or the server stops.
    The stream is this task parked in ``receive()`` and a :class:`StreamSink` the bus
    writes events to (no helper task, buffer or timer of its own).

    A server that polices what its callers may watch (the gateway) offers
    ``admit_listen(resources, principal)``, awaited before the stream opens: it raises
    the refusal (an :class:`McpError`) for a resource the caller may not read."""
    try:
        params = message.get("params") or {}
        subscription = ServedSubscription(app.server, message["id"], params, principal)
        admit = getattr(app.server, "admit_listen", None)
        if admit is not None and subscription.resources:
            await admit(subscription.resources, principal)
    except McpError as err:
        await writer.final(jsonrpc.error(message["id"], err), err.http_status, err.http_headers)
        return
    if not writer._sse_ok:
        failure = McpError(INVALID_REQUEST, "subscriptions/listen needs Accept: text/event-stream")
        await writer.final(jsonrpc.error(message["id"], failure), 406)
        return
    sink = StreamSink(writer._send, subscription.encode, app.keepalive)

    async def acknowledge() -> None:
        await writer.message(subscription.acknowledgement())

    await app.hold_stream(sink, receive, subscription.resources, acknowledge)
    if app.closing:
        await writer.final(jsonrpc.result(message["id"], subscription.final_result()))
    else:
        await writer.close()
