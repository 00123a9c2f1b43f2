"""The Streamable HTTP endpoint as one plain ASGI callable.

Routing per POST, decided from the parsed body and headers (the body is decoded once):

* ``MCP-Protocol-Version`` newer than any legacy revision, or a body whose ``_meta``
  names a protocol version -> the stateless 2026-07-28 path (:mod:`.modern`);
* anything else -> the legacy session path (:mod:`.legacy`).

GET and DELETE only exist for legacy sessions; when legacy support is off they get 405.
The app works mounted inside Starlette/FastAPI: it needs no lifespan events (it enters
the server's lifespan on first use if nobody did) and starts no background tasks.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ...protocol import headers as hdr
from ...protocol.negotiation import modern_version_of
from ...protocol.sse import KEEPALIVE_SECONDS
from ...runtime.contracts import ServedServer
from ...types import jsonrpc
from ...types.codec import DecodeError, DuplicateKeyError, decode, encode
from ...types.errors import INVALID_REQUEST, PARSE_ERROR, McpError, StateUnavailable
from ...types.versions import LEGACY_VERSIONS, era_of
from .asgi import (
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    HeaderReader,
    Receive,
    Rejection,
    Scope,
    Send,
    accepts_an_answer,
    read_body_now,
    send_error,
    serve_lifespan,
)
from .modern import WaitingCalls, handle_modern
from .security import HostPolicy
from .stream import KeepAlive, StreamSink

if TYPE_CHECKING:
    import asyncio

    from .sessions import SessionStore

RESPONSES_CHANNEL = "legacy-responses"
log = logging.getLogger("mcpkit.http")

#: ``authenticate(scope, headers) -> principal``; raise :class:`~.asgi.Rejection` to refuse.
Authenticator = Callable[[Scope, dict[str, str]], Awaitable[object]]
ASGICall = Callable[[Scope, Receive, Send], Awaitable[None]]


class HttpAuth(Protocol):
    """What the app needs of an authentication policy (:class:`mcpkit.auth.BearerAuth`).

    The app takes the policy rather than the policy building the app, so ``mcpkit.auth``
    imports nothing of the transports or the server (the layering in docs/architecture.md)."""

    @property
    def path(self) -> str: ...

    async def principal_of(self, scope: Scope, headers: dict[str, str]) -> object: ...

    def wrap(self, app: ASGICall, *, max_body_bytes: int | None = None) -> ASGICall: ...


@dataclass(slots=True)
class HttpOptions:
    path: str = "/mcp"
    max_body_bytes: int = 4 * 1024 * 1024
    #: A request body must arrive within this many seconds (slow-body clients get 408).
    body_timeout_s: float = 30.0
    legacy: bool = True
    #: Serve 2026-07-28 requests (off: behave like a legacy-only server, for interop tests).
    modern: bool = True
    max_sessions: int = 10_000
    session_idle_s: float = 1800.0
    retry_ms: int = 1000
    client_request_timeout_s: float = 300.0
    host_policy: HostPolicy = field(default_factory=HostPolicy)


class McpHttpApp:
    """ASGI application serving one :class:`~mcpkit.server.Server` at ``options.path``."""

    def __init__(
        self,
        server: ServedServer,
        options: HttpOptions | None = None,
        *,
        authenticate: Authenticator | None = None,
        auth: HttpAuth | None = None,
    ) -> None:
        """``auth``: a policy such as :class:`mcpkit.auth.BearerAuth`; the app then answers
        behind it (metadata, 401/403) and serves at its resource's path unless ``options``
        says otherwise.  ``authenticate`` is the lower-level hook for a guard of your own."""
        self.server = server
        self.options = options or HttpOptions(path=auth.path if auth is not None else "/mcp")
        backend = server.state
        #: Where legacy sessions are shared between replicas (None: this process only).
        self._shared = None if backend.url.startswith("memory") else backend
        self._sessions: SessionStore | None = None
        self.instance_id = secrets.token_hex(4)
        self._forwarding = False
        self.listen_streams: set[StreamSink] = set()
        #: The one keep-alive timer of this app's listen and GET streams.
        self.keepalive = KeepAlive(KEEPALIVE_SECONDS)
        #: The one watch timer of this app's natively cancelled calls.
        self.waiting_calls = WaitingCalls()
        self.closing = False
        #: This app's :func:`~.asgi.header_map` (its own bounded tables of header text).
        self.read_headers = HeaderReader()
        #: ``legacy.handle_legacy_post``, imported on the first legacy POST (see _route).
        self._legacy_post: Callable[..., Awaitable[None]] | None = None
        self.authenticate = authenticate
        #: The auth guard around :meth:`serve` (None: requests go straight in).
        self._guarded: ASGICall | None = None
        if auth is not None:
            self.authenticate = auth.principal_of
            self._guarded = auth.wrap(self.serve, max_body_bytes=self.options.max_body_bytes)
        self._lifespan_cm: contextlib.AbstractAsyncContextManager[Any] | None = None
        self._host_task: asyncio.Task[None] | None = None
        self._entered = False

    # ------------------------------------------------------------------ lifespan
    @contextlib.asynccontextmanager
    async def lifespan_context(self) -> AsyncIterator[None]:
        """Use this from a parent app's lifespan when mounting (optional)."""
        async with self.server.running():
            self._entered = True
            try:
                yield
            finally:
                self.shutdown_streams()
                self._entered = False

    def shutdown_streams(self) -> None:
        """End listen and GET streams (graceful shutdown sends listen results)."""
        self.closing = True
        for stream in list(self.listen_streams):
            stream.cancel()

    async def hold_stream(
        self,
        sink: StreamSink,
        receive: Receive,
        resources: Iterable[str] = (),
        opening: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """A server-held stream's life, the same for a listen stream and a legacy GET
        stream: on the change bus (``resources``: the URIs it wants updates of) and among
        the streams a shutdown ends (at once when the app is already closing), ``opening``
        sent, keep-alives while this task waits in ``receive()``, and off all of them
        when it ends."""
        bus = self.server.bus
        bus.attach(sink, resources)  # events from now on queue behind the opening
        self.listen_streams.add(sink)
        try:
            if self.closing:
                sink.cancel()
            if opening is not None:
                await opening()
            self.keepalive.add(sink, self.server.spawn)
            await sink.serve(receive)
        finally:
            sink.closed = True
            bus.detach(sink)
            self.listen_streams.discard(sink)
            self.keepalive.discard(sink)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await serve_lifespan(self.lifespan_context(), receive, send)

    async def _ensure_started(self) -> None:
        """Mounted without lifespan events: start the server (lifespan, background work)
        once, in a host task of its own so it outlives the request that triggered it."""
        if self._entered:
            return
        self._entered = True
        import asyncio

        import sniffio

        started = anyio.Event()
        if sniffio.current_async_library() == "asyncio":

            async def host() -> None:
                async with self.server.running():
                    started.set()
                    await anyio.sleep_forever()

            self._host_task = asyncio.get_running_loop().create_task(host())
            await started.wait()
        else:  # pragma: no cover - other loops: enter without a matching exit
            cm = self.server.running()
            await cm.__aenter__()
            self._lifespan_cm = cm

    # ------------------------------------------------------------------ ASGI
    @property
    def sessions(self) -> SessionStore:
        """The legacy session store, made on first use: a modern-only app (a serverless
        function) never loads it (~5 ms of a cold start)."""
        store = self._sessions
        if store is None:
            from .sessions import SessionStore

            store = self._sessions = SessionStore(
                self.options.max_sessions, self.options.session_idle_s, self._shared
            )
        return store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._guarded is not None:
            await self._guarded(scope, receive, send)
        else:
            await self.serve(scope, receive, send)

    async def serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str] | None = None,
    ) -> None:
        """The ASGI call without the ``auth=`` guard.  ``headers``: the request's
        :func:`~.asgi.header_map`, from a front that mapped them already (the gateway's)."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        path = scope.get("path", "")
        if path != self.options.path and path.rstrip("/") != self.options.path:
            await send_error(send, 404, McpError(INVALID_REQUEST, f"Not found: {path}"))
            return
        if headers is None:
            headers = self.read_headers(scope)
        policy = self.options.host_policy
        if not policy.host_ok(headers.get("host")):
            failure = McpError(
                INVALID_REQUEST, "Forbidden: Host header not allowed (DNS rebinding protection)"
            )
            await send_error(send, 403, failure)
            return
        if not policy.origin_ok(headers.get("origin")):
            failure = McpError(INVALID_REQUEST, "Forbidden: Origin not allowed")
            await send_error(send, 403, failure)
            return
        if not self._entered:  # checked here too: an await costs a coroutine per request
            await self._ensure_started()
        if not self._forwarding and self._shared is not None and self.options.legacy:
            self.start_forwarding()
        principal = None
        if self.authenticate is not None:
            try:
                principal = await self.authenticate(scope, headers)
            except Rejection as rejection:
                await send_error(send, rejection.status, rejection.error, None, rejection.headers)
                return
        method = scope.get("method", "GET")
        if method == "POST":
            await self._post(headers, receive, send, principal)
        elif method == "GET" and self.options.legacy and hdr.SESSION_ID in headers:
            from .legacy import handle_legacy_get

            await handle_legacy_get(self, headers, receive, send, principal)
        elif method == "DELETE" and self.options.legacy and hdr.SESSION_ID in headers:
            from .legacy import handle_legacy_delete

            await handle_legacy_delete(self, headers, send, principal)
        else:
            allow = b"POST, GET, DELETE" if self.options.legacy else b"POST"
            failure = McpError(INVALID_REQUEST, f"Method Not Allowed: {method}")
            await send_error(send, 405, failure, headers=[(b"allow", allow)])

    async def _post(
        self, headers: dict[str, str], receive: Receive, send: Send, principal: object
    ) -> None:
        content_type = headers.get("content-type", "")
        media = content_type
        if media != "application/json":  # else nothing to take apart (the usual value)
            media = content_type.split(";", 1)[0].strip().lower()
        if content_type and not (
            media == "application/json"
            or (media.startswith("application/") and media.endswith("+json"))
        ):
            failure = McpError(INVALID_REQUEST, "Unsupported Media Type: use application/json")
            await send_error(send, 415, failure)
            return
        # -- 406: an Accept that admits neither answer form (parsed only
        # when it is not plainly one of them).
        accept = headers.get("accept")
        if (
            accept is not None
            and ("q=" in accept or ("json" not in accept and "event-stream" not in accept))
            and not accepts_an_answer(accept)
        ):
            failure = McpError(
                INVALID_REQUEST,
                "Not Acceptable: accept application/json and text/event-stream",
            )
            await send_error(send, 406, failure)
            return
        # -- end 406
        body = await read_post_body(self.options, headers, receive, send)
        if body is not None:
            await self._route(body, headers, receive, send, principal)

    def _route(
        self,
        body: bytes,
        headers: dict[str, str],
        receive: Receive,
        send: Send,
        principal: object,
    ) -> Awaitable[None]:
        """The coroutine that answers a POST's body: the era's handler, or the refusal of a
        body that is not one request.  (A plain function: no frame of its own for a
        request to resume on each wake-up.)"""
        try:
            message = decode(body)
        except DuplicateKeyError as exc:
            return send_error(send, 400, McpError(INVALID_REQUEST, f"Invalid Request: {exc}"))
        except DecodeError as exc:
            return send_error(send, 400, McpError(PARSE_ERROR, f"Parse error: {exc}"))
        try:
            kind = jsonrpc.classify(message)
        except McpError as err:
            return send_error(send, 400, err, jsonrpc.answerable_id(message))
        header_version = headers.get(hdr.PROTOCOL_VERSION)
        # Modern: a header newer than every legacy revision, or a request whose _meta names
        # a protocol version (even an unknown one: it gets -32022, not a legacy refusal).
        modern = (header_version is not None and era_of(header_version) == "modern") or (
            kind is jsonrpc.Kind.REQUEST
            and (header_version is None or header_version not in LEGACY_VERSIONS)
            and modern_version_of(message.get("params")) is not None
        )
        if modern and self.options.modern:
            return handle_modern(self, message, kind, headers, receive, send, principal)
        if self.options.legacy:
            # Imported on first use and kept: a modern-only app, such as a serverless
            # function, never loads the session machinery.
            post = self._legacy_post
            if post is None:
                from .legacy import handle_legacy_post

                post = self._legacy_post = handle_legacy_post
            return post(self, message, kind, headers, send, principal)
        failure = McpError(INVALID_REQUEST, "This server speaks only protocol 2026-07-28")
        return send_error(send, 400, failure, message.get("id"))

    async def forward_response(self, session_id: str, message: dict[str, Any]) -> None:
        """An answer to a server->client request that another replica is waiting for."""
        backend = self.sessions.backend
        if backend is not None:
            await backend.publish(RESPONSES_CHANNEL, encode({"sid": session_id, "m": message}))

    def start_forwarding(self) -> None:
        """Receive answers forwarded by other replicas (needs the server running)."""
        if self._forwarding or self.sessions.backend is None or not self.server.can_spawn:
            return
        self._forwarding = True
        backend = self.sessions.backend

        async def receive_forwarded() -> None:
            # Runs for the server's lifetime: a backend outage (Redis restarting) must not
            # end it, nor escape into the background task group and take task workers
            # down with it.
            delay = 0.5
            while True:
                try:
                    async with backend.subscribe(RESPONSES_CHANNEL) as messages:
                        delay = 0.5
                        async for data in messages:
                            self._deliver_forwarded(data)
                except StateUnavailable:
                    pass  # an expected outage, logged once by the store's watch
                except Exception as exc:
                    log.warning("legacy response forwarding interrupted (%s); retrying", exc)
                await anyio.sleep(delay)
                delay = min(delay * 2, 5.0)

        self.server.spawn(receive_forwarded)

    def _deliver_forwarded(self, data: bytes) -> None:
        try:
            item = decode(data)
        except DecodeError:
            return
        if not isinstance(item, dict):
            return
        session = self.sessions.local(str(item.get("sid", "")))
        message = item.get("m")
        if session is not None and isinstance(message, dict):
            pending = session.outgoing.resolve(message)
            if pending is not None:
                pending.waiter.resolve(message)

    async def aclose(self) -> None:
        self.shutdown_streams()
        if self._host_task is not None:
            self._host_task.cancel()
            self._host_task = None
        if self._lifespan_cm is not None:
            cm, self._lifespan_cm = self._lifespan_cm, None
            await cm.__aexit__(None, None, None)


async def read_post_body(
    options: HttpOptions, headers: dict[str, str], receive: Receive, send: Send
) -> bytes | None:
    """A POST's body, or None once the refusal was sent (413, 408) or the client left (the
    app's and the gateway front's, so both refuse alike)."""
    try:
        return await read_body_now(
            receive, options.max_body_bytes, headers.get("content-length"), options.body_timeout_s
        )
    except (BodyTooLarge, ClientGone, BodyTimeout) as refused:
        await refuse_body(refused, options, send)
        return None


async def refuse_body(
    refused: BodyTooLarge | ClientGone | BodyTimeout, options: HttpOptions, send: Send
) -> None:
    """Answer a body that could not be read: 413 over the limit, 408 too slow (and close),
    nothing to a client that left."""
    if isinstance(refused, BodyTooLarge):
        limit = options.max_body_bytes
        failure = McpError(INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes")
        await send_error(send, 413, failure)
    elif isinstance(refused, BodyTimeout):
        failure = McpError(INVALID_REQUEST, "Request Timeout: the body arrived too slowly")
        await send_error(send, 408, failure, headers=[(b"connection", b"close")])


def create_app(server: ServedServer, options: HttpOptions | None = None, **kw: Any) -> McpHttpApp:
    return McpHttpApp(server, options, **kw)
