"""Streamable HTTP client transport (httpx), both protocol eras.

Every request is one POST whose answer is either ``application/json`` or an SSE stream
scoped to that request (decoding: :mod:`.client_http_wire`).  Which rules apply is read
off the message itself:

* **Modern** (``params._meta`` names a protocol version): stateless.  Headers
  ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` (base64 sentinel form when the
  value is not plain visible ASCII) and whatever ``Mcp-Param-*`` the caller computed from
  the tool's ``x-mcp-header`` annotations.  Closing the response stream *is* cancellation,
  so a timeout or a cancelled caller just closes it; a stream that ends without the answer
  lost the request (no resumption in this era).
* **Legacy** (``initialize`` and everything after it): ``Mcp-Session-Id`` from the
  ``initialize`` response on every later message, ``MCP-Protocol-Version`` once
  negotiated, a standalone GET stream for server-initiated messages (opened before the
  next request is sent, so the order is deterministic), server->client requests answered
  by POSTing the response, cancellation by ``notifications/cancelled`` (closing a stream
  is not cancellation here), and resumption: a POST stream that ends without the answer
  is resumed with a GET carrying ``Last-Event-ID`` after the ``retry:`` delay the server
  asked for.  A response that turns up on the GET stream is routed to its request.  HTTP
  404 on a session means it expired: :class:`SessionExpiredError` tells the client to
  re-initialize.

POSTs go out on one of two wires, their answers read by the same rules: httpx, or a
given :class:`~.http11.Http11Pool` for an ``http://`` URL on asyncio (the other
requests, ``https://``, trio and an ``auth`` stay on httpx).

httpx's read timeout is off on purpose: SSE streams (listen, slow tools) may be idle for
long; each request's deadline is a cancel scope that progress notifications move forward,
never past the hard maximum.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Unpack

import anyio
import httpx
from anyio.abc import TaskGroup, TaskStatus

from ..protocol.correlation import note_sent
from ..runtime.runner import on_asyncio
from ..types import jsonrpc
from ..types.codec import encode
from ..types.errors import INTERNAL_ERROR, McpError
from ..types.jsonrpc import Kind, Message, RequestId
from .client_base import (
    ConnectionClosedError,
    HttpStatusError,
    InboundNotificationHandler,
    InboundRequestHandler,
    MessageStream,
    ProtocolViolationError,
    RequestTimeoutError,
    SendOptions,
    ServerError,
    SessionExpiredError,
    TransportError,
    message_stream,
)
from .client_http_era import (
    LEGACY_WIRE,
    MODERN_WIRE,
    WireEra,
    request_headers,
    sendable_headers,
    wire_era,
)
from .client_http_wire import (
    Answer,
    Call,
    http_errors,
    is_sse,
    json_answer,
    read_body,
    shared_ssl_context,
    sse_messages,
    started_once,
    stream_lost,
    unwrap_answer,
)

if TYPE_CHECKING:
    from .http11 import Http11Pool

log = logging.getLogger("mcpkit.client.http")


class HttpTransport:
    """A Streamable HTTP endpoint; use as ``async with HttpTransport(url) as t``."""

    kind = "http"

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        verify: bool = True,
        connect_timeout: float = 10.0,
        legacy_get_stream: bool = True,
        default_retry_ms: int = 1000,
        max_resumptions: int = 10,
        max_message_bytes: int = 32 * 1024 * 1024,
        pool: Http11Pool | None = None,
    ) -> None:
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.server_key = f"http:{parsed.scheme}://{parsed.host}:{parsed.port or ''}{parsed.path}"
        self.headers = sendable_headers(headers)
        self.auth = auth
        self.verify = verify
        self.connect_timeout = connect_timeout
        self.legacy_get_stream = legacy_get_stream
        self.default_retry_ms = default_retry_ms
        self.max_resumptions = max_resumptions
        self.max_message_bytes = max_message_bytes
        self._client = http_client
        #: The pooled wire for POSTs to an ``http://`` URL on asyncio (None: httpx's).
        self.pool = pool if parsed.scheme == "http" and auth is None else None
        #: A POST's request line and ``Host`` header, and where it goes (the pooled wire's).
        self.request_line = b"POST " + parsed.raw_path + b" HTTP/1.1\r\nHost: " + parsed.netloc
        self.address = (parsed.host, parsed.port or 80)
        self._owns_client = http_client is None
        self._tg: TaskGroup | None = None
        self._ids = itertools.count(1)
        self._on_request: InboundRequestHandler | None = None
        self._on_notification: InboundNotificationHandler | None = None
        self._server_requests: dict[RequestId, anyio.CancelScope] = {}
        self._inflight: dict[RequestId, Call] = {}
        self._get_scope: anyio.CancelScope | None = None
        self.session_id: str | None = None
        self.legacy_version: str | None = None

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> HttpTransport:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(
                    connect=self.connect_timeout, read=None, write=30.0, pool=self.connect_timeout
                ),
                auth=self.auth,
                verify=shared_ssl_context() if self.verify is True else self.verify,
                follow_redirects=False,
            )
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        tg, self._tg = self._tg, None
        if tg is None:
            return None
        if self._get_scope is not None:
            self._get_scope.cancel()
        with anyio.CancelScope(shield=True):
            if self.session_id is not None and self._client is not None:
                with anyio.move_on_after(2), contextlib.suppress(httpx.HTTPError):
                    await self._client.request("DELETE", self.url, headers=self._legacy_headers())
        tg.cancel_scope.cancel()
        try:
            await tg.__aexit__(None, None, None)
        finally:
            if self._owns_client and self._client is not None:
                with anyio.CancelScope(shield=True):
                    await self._client.aclose()
        return None

    def set_handlers(
        self, on_request: InboundRequestHandler, on_notification: InboundNotificationHandler
    ) -> None:
        self._on_request = on_request
        self._on_notification = on_notification

    def _http(self) -> httpx.AsyncClient:
        if self._client is None or self._tg is None:
            raise RuntimeError("HttpTransport used outside 'async with'")
        return self._client

    def _errors(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return http_errors(self.url, doing, self.connect_timeout)

    # ------------------------------------------------------------------ headers
    def _legacy_headers(self) -> dict[str, str]:
        out = dict(self.headers)
        if self.session_id is not None:
            out["Mcp-Session-Id"] = self.session_id
        if self.legacy_version is not None:
            out["MCP-Protocol-Version"] = self.legacy_version
        return out

    def _headers_for(self, message: Message, extra: dict[str, str] | None) -> dict[str, str]:
        legacy = None if message.get("method") == "initialize" else self._legacy_headers()
        return request_headers(message, self.headers, legacy, extra)

    # ------------------------------------------------------------------ requests
    async def request(
        self, method: str, params: dict[str, Any] | None, **options: Unpack[SendOptions]
    ) -> dict[str, Any]:
        timeout = options["timeout"]
        max_timeout = options.get("max_timeout")
        client = self._http()
        request_id = next(self._ids)
        note_sent(request_id)
        message = jsonrpc.request(request_id, method, params)
        meta = params.get("_meta") if params else None
        call = Call(
            request_id,
            method,
            wire_era(params),
            timeout=timeout,
            on_progress=options.get("on_progress"),
            progress_token=meta.get("progressToken") if isinstance(meta, dict) else None,
        )
        started = anyio.current_time()
        scope = call.scope = anyio.CancelScope()
        if timeout is not None:
            scope.deadline = started + timeout
            limit = max_timeout if max_timeout is not None else timeout * 10
            call.hard_deadline = started + limit
        if call.era.routed:
            self._inflight[request_id] = call
        try:
            with scope:
                answer = await self._exchange(client, message, call, options.get("headers"))
                return unwrap_answer(answer, method)
        except anyio.get_cancelled_exc_class():
            await self._cancel(call, "the caller cancelled the request")
            raise
        finally:
            self._inflight.pop(request_id, None)
        # Only reached when our own deadline fired.
        await self._cancel(call, "request timed out")
        hard = (
            call.hard_deadline - started > (timeout or 0.0)
            and anyio.current_time() >= call.hard_deadline - 0.05
        )
        raise RequestTimeoutError(
            method, (call.hard_deadline - started) if hard else (timeout or 0.0), hard=hard
        )

    async def _exchange(
        self,
        client: httpx.AsyncClient,
        message: Message,
        call: Call,
        extra: dict[str, str] | None,
    ) -> Message:
        headers = self._headers_for(message, extra)
        with self._errors(f"sending {call.method}"):
            if self.pool is not None and on_asyncio():
                answer = await self._pooled_exchange(self.pool, headers, encode(message), call)
            else:
                async with client.stream(
                    "POST", self.url, content=encode(message), headers=headers
                ) as response:
                    answer = await self.read_answer(response, call)
        if answer is None:
            answer = call.routed
        if answer is not None:
            return answer
        if not call.era.resumable(call.last_event_id, self.session_id):
            raise stream_lost(call)
        return await self._resume(client, call)

    async def _pooled_exchange(
        self, pool: Http11Pool, headers: dict[str, str], body: bytes, call: Call
    ) -> Message | None:
        """One POST on the pooled wire, its answer read by the same rules; the call's
        deadline is its cancel scope, as on the httpx wire (closing the response before
        its end closes the connection)."""
        lines = "".join(f"\r\n{name}: {value}" for name, value in headers.items())
        length = b"\r\ncontent-length: %d\r\n\r\n" % len(body)
        data = self.request_line + lines.encode("latin-1") + length + body
        response = await pool.request(*self.address, data, connect_timeout=self.connect_timeout)
        try:
            return await self.read_answer(response, call)
        finally:
            response.close()

    async def _resume(self, client: httpx.AsyncClient, call: Call) -> Message:
        """Legacy resumption: GET with Last-Event-ID after the server's retry delay."""
        for _ in range(self.max_resumptions):
            delay = call.retry_ms if call.retry_ms is not None else self.default_retry_ms
            with anyio.move_on_after(delay / 1000):
                await call.arrived.wait()
            if call.routed is not None:
                return call.routed
            headers = self._legacy_headers()
            headers["Accept"] = "text/event-stream"
            headers["Last-Event-ID"] = str(call.last_event_id)
            with self._errors(f"resuming {call.method}"):
                async with client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200 or not is_sse(response):
                        raise ConnectionClosedError(
                            f"the response stream of {call.method} broke and resuming it failed "
                            f"(GET with Last-Event-ID answered HTTP {response.status_code})"
                        )
                    answer = await self._read_sse(response, call, self.max_message_bytes)
            if answer is not None or call.routed is not None:
                return answer or call.routed  # type: ignore[return-value]
        raise ConnectionClosedError(
            f"gave up on {call.method} after {self.max_resumptions} stream resumptions"
        )

    async def read_answer(
        self, response: Answer, call: Call, limit: int | None = None, *, relayed: bool = False
    ) -> Message | None:
        """The answer to ``call`` in ``response`` (None: its stream ended without it),
        read by this transport's rules, at most ``limit`` bytes (else its own limit);
        ``relayed`` as :func:`~.client_http_wire.json_answer` takes it."""
        limit = self.max_message_bytes if limit is None else limit
        status = response.status_code
        if call.method == "initialize" and status == 200:
            self.session_id = response.headers.get("mcp-session-id") or None
        if (
            status == 404
            and call.era.session_bound
            and self.session_id is not None
            and call.method != "initialize"
        ):
            expired = self.session_id
            self.session_id = None
            if self._get_scope is not None:
                self._get_scope.cancel()
            raise SessionExpiredError(f"the server no longer knows session {expired!r} (HTTP 404)")
        if status == 200 and is_sse(response):
            return await self._read_sse(response, call, limit)
        body = await read_body(response, limit, call.method)
        message = json_answer(body, status, call.method, self.url, relayed=relayed)
        if message is None:
            if status == 202:
                raise ProtocolViolationError(
                    f"the server accepted {call.method} (HTTP 202) but sent no response"
                )
            raise ProtocolViolationError(
                f"unexpected answer to {call.method}: HTTP {status}, "
                f"content-type {response.headers.get('content-type', '(none)')!r}"
            )
        return message

    async def _read_sse(self, response: Answer, call: Call, limit: int) -> Message | None:
        """Handle one request's stream until its answer (returned) or the stream's end."""
        events = sse_messages(response, call, limit)
        async with contextlib.aclosing(events):
            async for kind, message in events:
                if kind in (Kind.RESULT, Kind.ERROR):
                    rid = message.get("id")
                    if rid == call.request_id or (rid is None and kind is Kind.ERROR):
                        return message
                    self._route(message)
                elif kind is Kind.NOTIFICATION:
                    await self._notification(message, call)
                else:
                    self._server_request(message, call.era)
        return None

    def _route(self, message: Message) -> None:
        """A response on a stream that is not its own (legacy servers do this)."""
        rid = message.get("id")
        call = self._inflight.get(rid) if isinstance(rid, (str, int)) else None
        if call is not None:
            call.deliver(message)
        else:
            log.debug("ignoring a response for unknown id %r", rid)

    async def _notification(self, message: Message, call: Call | None) -> None:
        method = message["method"]
        params = jsonrpc.params_of(message)
        if method == "notifications/progress":
            token = params.get("progressToken")
            if call is None or call.progress_token is None or token != call.progress_token:
                call = next(
                    (
                        c
                        for c in self._inflight.values()
                        if c.progress_token is not None and c.progress_token == token
                    ),
                    None,
                )
            if call is not None:
                await self._progress(call, params)
            return
        if method == "notifications/cancelled":
            scope = self._server_requests.get(params.get("requestId"))  # type: ignore[arg-type]
            if scope is not None:
                scope.cancel()
                return
        if self._on_notification is not None:
            try:
                await self._on_notification(message)
            except Exception:
                log.exception("notification handler failed for %s", method)

    async def _progress(self, call: Call, params: dict[str, Any]) -> None:
        if call.scope is not None and call.timeout is not None:
            call.scope.deadline = min(call.hard_deadline, anyio.current_time() + call.timeout)
        if call.on_progress is not None:
            try:
                outcome = call.on_progress(params)
                if outcome is not None:
                    await outcome
            except Exception:
                log.exception("progress callback failed")

    # ------------------------------------------------------------------ server -> client
    def _server_request(self, message: Message, era: WireEra) -> None:
        if not era.serves_requests:
            log.warning(
                "ignoring %s: 2026-07-28 servers must not send requests", message.get("method")
            )
            return
        if self._tg is not None:
            self._tg.start_soon(self._answer_server_request, message)

    async def _answer_server_request(self, message: Message) -> None:
        rid = message["id"]
        reply: Message | None = None
        with anyio.CancelScope() as scope:
            self._server_requests[rid] = scope
            try:
                if self._on_request is None:
                    raise McpError(-32601, f"Method not found: {message['method']}")
                reply = jsonrpc.result(rid, await self._on_request(message))
            except McpError as exc:
                reply = jsonrpc.error(rid, exc)
            except Exception as exc:
                log.exception("answering %s failed", message.get("method"))
                reply = jsonrpc.error(rid, McpError(INTERNAL_ERROR, f"client error: {exc}"))
            finally:
                self._server_requests.pop(rid, None)
        if reply is not None and not scope.cancelled_caught:
            try:
                await self._post(reply, None)
            except (TransportError, ServerError) as exc:
                log.warning("could not deliver the answer to %s: %s", message.get("method"), exc)

    # ------------------------------------------------------------------ notifications
    async def notify(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        await self._post(jsonrpc.notification(method, params), headers)

    async def _post(self, message: Message, extra: dict[str, str] | None) -> None:
        """POST a notification or a response: the server answers 202 (or 200)."""
        client = self._http()
        what = str(message.get("method") or f"the response to {message.get('id')!r}")
        with self._errors(f"sending {what}"):
            async with client.stream(
                "POST", self.url, content=encode(message), headers=self._headers_for(message, extra)
            ) as response:
                # (read to its end, bounded, even when ignored: the connection is reused)
                body = await read_body(response, self.max_message_bytes, what)
                status = response.status_code
                if status in (200, 202, 204):
                    return
                json_answer(body, status, what, self.url)
        raise HttpStatusError(f"{what}: HTTP {status}", status)

    async def _cancel(self, call: Call, reason: str) -> None:
        """Tell the server a request is off, where closing its stream does not (legacy)."""
        if not call.era.cancel_by_notification:
            return  # the response stream is closed on the way out: that is cancellation
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            try:
                await self.notify(
                    "notifications/cancelled", {"requestId": call.request_id, "reason": reason}
                )
            except (TransportError, ServerError) as exc:
                log.debug("notifications/cancelled not delivered: %s", exc)

    # ------------------------------------------------------------------ legacy GET stream
    async def legacy_session_started(self, version: str) -> None:
        """Remember the version; open the GET stream and wait until it is established
        (or refused), so the server sees it before our next request."""
        self.legacy_version = version
        if self._get_scope is not None:
            self._get_scope.cancel()
            self._get_scope = None
        if self.legacy_get_stream and self.session_id is not None and self._tg is not None:
            self._get_scope = anyio.CancelScope()
            with anyio.move_on_after(self.connect_timeout):
                await self._tg.start(self._get_stream, self._get_scope, self.session_id)

    async def _get_stream(
        self,
        scope: anyio.CancelScope,
        session_id: str,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The standalone stream for server-initiated messages; reconnects while the
        session lives, slower after each failure."""
        call = Call(request_id="(GET)", method="GET stream", era=LEGACY_WIRE)
        failures = 0
        with scope, started_once(task_status) as started:
            while self.session_id == session_id:
                headers = self._legacy_headers()
                headers["Accept"] = "text/event-stream"
                if call.last_event_id:
                    headers["Last-Event-ID"] = call.last_event_id
                try:
                    async with self._http().stream("GET", self.url, headers=headers) as response:
                        started()
                        if response.status_code != 200 or not is_sse(response):
                            log.debug("no GET stream (HTTP %s)", response.status_code)
                            return
                        failures = 0
                        async for kind, message in sse_messages(
                            response, call, self.max_message_bytes
                        ):
                            if kind is Kind.NOTIFICATION:
                                await self._notification(message, None)
                            elif kind is Kind.REQUEST:
                                self._server_request(message, LEGACY_WIRE)
                            else:
                                self._route(message)
                except (httpx.HTTPError, ProtocolViolationError) as exc:
                    log.debug("GET stream failed: %s", exc)
                    started()
                    failures += 1
                    if failures > 5:
                        return
                delay = call.retry_ms if call.retry_ms is not None else self.default_retry_ms
                await anyio.sleep(min(30.0, delay / 1000 * (2**failures)))

    # ------------------------------------------------------------------ listen
    @contextlib.asynccontextmanager
    async def listen(
        self, params: dict[str, Any], *, headers: dict[str, str] | None = None
    ) -> AsyncIterator[MessageStream]:
        client = self._http()
        request_id = next(self._ids)
        message = jsonrpc.request(request_id, "subscriptions/listen", params)
        call = Call(request_id, "subscriptions/listen", MODERN_WIRE)
        send, stream = message_stream(64)

        async def run() -> None:
            with send:
                try:
                    with self._errors("listening"):
                        async with client.stream(
                            "POST",
                            self.url,
                            content=encode(message),
                            headers=self._headers_for(message, headers),
                        ) as response:
                            if response.status_code != 200 or not is_sse(response):
                                body = await read_body(
                                    response, self.max_message_bytes, call.method
                                )
                                answer = json_answer(
                                    body, response.status_code, call.method, self.url
                                )
                                if answer is not None:
                                    await send.send(answer)
                                return
                            async for kind, item in sse_messages(
                                response, call, self.max_message_bytes
                            ):
                                if kind is Kind.REQUEST:
                                    continue
                                await send.send(item)
                                if kind is not Kind.NOTIFICATION and item.get("id") == request_id:
                                    return
                    why = f" ({call.broken})" if call.broken else ""
                    stream.error = ConnectionClosedError(
                        f"the server closed the listen stream without ending it{why}"
                    )
                except (TransportError, ServerError) as exc:
                    stream.error = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                yield stream
            finally:
                tg.cancel_scope.cancel()  # closing the stream ends the subscription

    def describe(self) -> str:
        session = f", session {self.session_id}" if self.session_id else ""
        return f"Streamable HTTP endpoint {self.url}{session}"


__all__ = ["HttpTransport"]
