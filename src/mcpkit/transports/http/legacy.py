"""Legacy (<= 2025-11-25) Streamable HTTP: sessions, server->client requests, the GET
stream and resumable SSE.

Sessions (see :mod:`.sessions`) are bounded by count and idle time and can be shared
between replicas through the state backend.  Each POST stream's events
are kept in a small per-session event log so a client can resume with ``Last-Event-ID``
(event ids are ``<stream>-<seq>``).  Disconnecting does not cancel a legacy request (the
2025-11-25 rule); ``notifications/cancelled`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from ...protocol import headers as hdr
from ...protocol.correlation import cancelled_request_id
from ...protocol.sse import KEEPALIVE, KEEPALIVE_SECONDS, encode_event, priming_event
from ...runtime.changes import ChangeEvent
from ...runtime.exchange import Exchange
from ...runtime.listen import legacy_encoded
from ...runtime.runner import new_handle, run
from ...types import jsonrpc
from ...types.codec import encode
from ...types.errors import INTERNAL_ERROR, INVALID_REQUEST, McpError, StateUnavailable
from ...types.versions import LEGACY_VERSIONS
from .asgi import (
    HttpExchange,
    Receive,
    Send,
    send_empty,
    send_error,
    watch_disconnect,
)
from .sessions import HttpSession, ReplyWaiter, StreamLog
from .stream import SSE_HEADERS, ResponseWriter, StreamSink, send_json_answer

if TYPE_CHECKING:
    from .app import McpHttpApp

_SESSION_ID = hdr.SESSION_ID.encode()
_REQUEST_SCOPED = frozenset({"notifications/progress", "notifications/message"})


class LegacyExchange(HttpExchange):
    __slots__ = ("app", "headers", "session", "writer")
    writer: ResponseWriter  # the response stream this request's messages go on

    def __init__(self, app: McpHttpApp, session: HttpSession, writer: ResponseWriter) -> None:
        self.app = app
        self.session = session
        self.writer = writer
        self.headers: Mapping[str, str] = Exchange.headers  # set per request

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        outgoing = self.session.outgoing
        request_id = f"{self.app.instance_id}-{outgoing.next_id()}"
        waiter = ReplyWaiter()
        outgoing.register(request_id, method, waiter)
        message = jsonrpc.request(request_id, method, params)
        delivered = await self.writer.message(message)
        if not delivered and self.session.pushed is not None:
            delivered = self.session.pushed.push(encode_event(encode(message)))
        if not delivered:
            outgoing.forget(request_id)
            raise McpError(
                INTERNAL_ERROR,
                f"cannot send {method}: the client accepts no event stream for this request",
            )
        with anyio.fail_after(timeout or self.app.options.client_request_timeout_s):
            await waiter.done.wait()
        if waiter.error is not None:
            raise waiter.error
        return waiter.value or {}

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """On this request's stream while it is open.  After its answer, a notification
        that is not about the request itself (a URL elicitation completed later) goes on
        the session's standalone GET stream, if open; progress and log messages of a
        finished request are dropped."""
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if await self.writer.message(message) or method in _REQUEST_SCOPED:
            return
        if self.session.pushed is not None:
            self.session.pushed.push(encode_event(encode(message)))

    async def close_stream(self, retry_ms: int | None = None) -> None:
        await self.writer.detach(retry_ms)


async def handle_legacy_post(
    app: McpHttpApp,
    message: dict[str, Any],
    kind: jsonrpc.Kind,
    headers: dict[str, str],
    send: Send,
    principal: object,
) -> None:
    store = app.sessions
    session_id = headers.get(hdr.SESSION_ID)
    version = headers.get(hdr.PROTOCOL_VERSION)
    if version is not None and version not in LEGACY_VERSIONS:
        failure = McpError(
            INVALID_REQUEST, f"Bad Request: unsupported MCP-Protocol-Version {version!r}"
        )
        await send_error(send, 400, failure, message.get("id"))
        return
    is_initialize = kind is jsonrpc.Kind.REQUEST and message.get("method") == "initialize"
    if is_initialize and session_id is None:
        session = await store.create(principal)
        if session is None:
            failure = McpError(INTERNAL_ERROR, "Too many sessions; try again later")
            await send_error(send, 503, failure, message.get("id"), [(b"retry-after", b"5")])
            return
        try:
            result = await session.legacy.handle_request(app.server, message, Exchange())
        except McpError as err:
            await store.drop(session.legacy.id)
            await send_error(send, 200, err, message["id"])
            return
        await store.save(session, force=True)
        session_header = [(_SESSION_ID, session.legacy.id.encode())]
        await send_json_answer(send, jsonrpc.result(message["id"], result), 200, session_header)
        return
    session = await _session_or_answer(app, headers, send, principal, message.get("id"))
    if session is None:
        return
    session.legacy.touch()
    if kind is jsonrpc.Kind.NOTIFICATION:
        if message["method"] == "notifications/cancelled":
            target = cancelled_request_id(jsonrpc.params_of(message))
            scope = session.incoming.get(target)
            if scope is not None:
                scope.cancel()
        else:
            session.legacy.on_notification(message)
            await store.save(session)
        await app.server.dispatch_notification(message, session=session.legacy, principal=principal)
        await send_empty(send, 202)
        return
    if kind in (jsonrpc.Kind.RESULT, jsonrpc.Kind.ERROR):
        pending = session.outgoing.resolve(message)
        if pending is not None:
            pending.waiter.resolve(message)
        elif store.backend is not None:
            await app.forward_response(session.legacy.id, message)
        await send_empty(send, 202)
        return
    await _handle_request(app, session, message, headers, send)  # saves the session


async def _handle_request(
    app: McpHttpApp,
    session: HttpSession,
    message: dict[str, Any],
    headers: dict[str, str],
    send: Send,
) -> None:
    request_id = message["id"]
    sse_ok = "text/event-stream" in headers.get("accept", "text/event-stream")
    resumable = sse_ok and session.legacy.protocol_version >= "2025-11-25"
    writer = ResponseWriter(
        send,
        sse_ok=sse_ok,
        extra_headers=[(_SESSION_ID, session.legacy.id.encode())],
        # Only a response that becomes a stream gets an event log: a plain JSON answer has
        # nothing to resume, and would push live streams' logs out of the session's bound.
        new_log=session.new_stream if resumable else None,
        retry_ms=app.options.retry_ms if resumable else None,
    )
    exchange = LegacyExchange(app, session, writer)
    exchange.headers = headers
    # The request runs in this task, through the runner; notifications/cancelled
    # cancels it through its handle.
    handle = new_handle()
    if not session.incoming.start(request_id, handle):
        failure = McpError(INVALID_REQUEST, f"Request id {request_id!r} is already in flight")
        await writer.final(jsonrpc.error(request_id, failure), 409)
        return
    try:
        ran = run(_answer(app, session, message, exchange), handle)
        if not isinstance(ran, tuple):
            ran = await ran
        finished, answer = ran
    finally:
        session.incoming.finish(request_id)
    if not finished:
        answer = None
    outcome, status, extra = answer or (None, 200, None)
    if outcome is None:  # cancelled by notifications/cancelled: no response is sent
        await app.sessions.save(session)
        await writer.close()
        log = writer.log
        if isinstance(log, StreamLog):
            log.finished = True
            log.changed.set()
        return
    # Save what the request changed (logging/setLevel, subscriptions) before the client
    # can see the answer: its next request, on any replica, must find the new state.
    await app.sessions.save(session)
    await writer.final(outcome, status, extra)


async def _answer(
    app: McpHttpApp, session: HttpSession, message: dict[str, Any], exchange: LegacyExchange
) -> tuple[dict[str, Any], int, list[tuple[bytes, bytes]] | None] | None:
    """The response message, HTTP status and extra headers for one legacy request."""
    request_id = message["id"]
    try:
        result = await session.legacy.handle_request(app.server, message, exchange)
        return jsonrpc.result(request_id, result), 200, None
    except McpError as err:
        if err.http_status in (401, 403, 429):  # policy refusals keep their HTTP status
            return jsonrpc.error(request_id, err), err.http_status, err.http_headers
        return jsonrpc.error(request_id, err), 200, None


async def handle_legacy_get(
    app: McpHttpApp, headers: dict[str, str], receive: Receive, send: Send, principal: object
) -> None:
    """Resume a stream (``Last-Event-ID``) or open the session's standalone stream."""
    session = await _session_or_answer(app, headers, send, principal)
    if session is None:
        return
    if "text/event-stream" not in headers.get("accept", ""):
        await send_error(
            send, 406, McpError(INVALID_REQUEST, "GET needs Accept: text/event-stream")
        )
        return
    last = headers.get("last-event-id")
    if last:
        await _resume(app, session, last, receive, send)
        return
    if session.get_open:
        await send_error(send, 409, McpError(INVALID_REQUEST, "A GET stream is already open"))
        return
    await _standalone(app, session, receive, send)


async def _resume(
    app: McpHttpApp, session: HttpSession, last: str, receive: Receive, send: Send
) -> None:
    key, _, seq_text = last.rpartition("-")
    log = session.streams.get(key)
    if log is None or not (seq_text.isascii() and seq_text.isdigit()):
        await send_error(send, 404, McpError(INVALID_REQUEST, f"Unknown Last-Event-ID {last!r}"))
        return
    seq = int(seq_text)
    headers = [*SSE_HEADERS, (_SESSION_ID, session.legacy.id.encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send(
        {
            "type": "http.response.body",
            "body": priming_event(last, app.options.retry_ms),
            "more_body": True,
        }
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_disconnect, receive, tg.cancel_scope)
        while True:
            for s, data in log.after(seq):
                seq = s
                await send(
                    {
                        "type": "http.response.body",
                        "body": encode_event(data, event_id=f"{key}-{s}"),
                        "more_body": True,
                    }
                )
            if log.finished:
                break
            changed = log.changed
            with anyio.move_on_after(KEEPALIVE_SECONDS):
                await changed.wait()
            session.legacy.touch()
        tg.cancel_scope.cancel()
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _standalone(app: McpHttpApp, session: HttpSession, receive: Receive, send: Send) -> None:
    """The session's standalone GET stream: change notifications and server requests
    that have no POST stream to go on (``session.pushed``), keep-alive comments (which
    also keep the session from expiring) while idle.  Like a listen stream it is this
    task parked in ``receive()`` plus a :class:`StreamSink` (see :mod:`.stream`)."""
    session.get_open = True
    legacy = session.legacy

    def encode_for_session(event: ChangeEvent) -> bytes | None:
        return legacy_encoded(event, legacy.subscriptions, legacy.id)

    sink = StreamSink(send, encode_for_session, app.keepalive, on_interval=legacy.touch)
    session.pushed = sink
    headers = [*SSE_HEADERS, (_SESSION_ID, legacy.id.encode())]
    try:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
        await app.hold_stream(sink, receive)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:
        pass
    finally:
        sink.closed = True
        session.get_open = False
        session.pushed = None


async def _session_or_answer(
    app: McpHttpApp,
    headers: dict[str, str],
    send: Send,
    principal: object,
    request_id: jsonrpc.RequestId | None = None,
) -> HttpSession | None:
    """The session a request names, or None after answering 400 (no id), 503 (the state
    store is down) or 404 (unknown, expired, or another principal's, answered alike: a
    session id is never a credential, and the answer must not confirm that it exists)."""
    session_id = headers.get(hdr.SESSION_ID)
    if session_id is None:
        failure = McpError(INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header")
        await send_error(send, 400, failure, request_id)
        return None
    try:
        session = await app.sessions.get(session_id)
    except StateUnavailable as unavailable:
        await send_error(send, 503, unavailable, request_id, unavailable.http_headers)
        return None
    if session is None or (principal is not None and session.legacy.principal != principal):
        failure = McpError(INVALID_REQUEST, "Session not found: initialize a new session")
        await send_error(send, 404, failure, request_id)
        return None
    return session


async def handle_legacy_delete(
    app: McpHttpApp, headers: dict[str, str], send: Send, principal: object
) -> None:
    session = await _session_or_answer(app, headers, send, principal)
    if session is not None:
        await app.sessions.drop(session.legacy.id)
        await send_empty(send, 200)
