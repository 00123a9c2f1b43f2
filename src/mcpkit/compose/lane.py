"""The fast lane: a 2026-07-28 call forwarded to a 2026-07-28 HTTP upstream (by a proxy
or the gateway).

A modern call through a proxy needs nothing of the client stack but the wire: no
session, no server->client requests (input comes back as an ``InputRequiredResult``,
which passes through untouched), no resumption (closing the stream cancels).  So it is
the shortest path of the client's own :class:`~mcpkit.transports.client_http.HttpTransport`
(URL, request line, checked headers, pool): one ``encode``, a head built by the client's
era rules once per call shape, one write on a pooled keep-alive connection under the
pool's deadline, and the answer read by the client's rules (the answer-size cap
included).  Anything else (legacy upstreams, ``https://``, a version the upstream
refuses) takes the client path.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import httpx

from ..client import Client, telemetry
from ..protocol.correlation import note_sent
from ..runtime.runner import on_asyncio
from ..server.mount import strip_server_info
from ..transports.client_base import (
    MessageTooLargeError,
    ProtocolViolationError,
    RequestTimeoutError,
)
from ..transports.client_http import HttpTransport
from ..transports.client_http_era import MODERN_WIRE, request_headers
from ..transports.client_http_wire import Call, http_error, json_answer, stream_lost, unwrap_answer
from ..transports.http11 import DeadlineExceeded, PooledResponse
from ..types.codec import DecodeError, decode_relayed, encode
from ..types.errors import UNSUPPORTED_PROTOCOL_VERSION, McpError
from ..types.methods import METHODS
from ..types.versions import META_LOG_LEVEL, META_PROTOCOL_VERSION, META_SERVER_INFO

if TYPE_CHECKING:
    from .bridge import FrontCall
    from .replicas import AnyUpstream

__all__ = ["FastLane", "ResultTooLarge", "capped", "pass_through"]

MAX_ANSWER_BYTES = 64 * 1024 * 1024
_HEADS_MAX = 1024
#: Method -> its ``Mcp-Name`` member (``types.methods.name_param``, as one lookup).
_NAME_PARAMS = {method: spec.name_param for method, spec in METHODS.items()}
ProgressRelay = Callable[[dict[str, Any]], Awaitable[None]]


class ResultTooLarge(McpError):
    """An upstream answer over the configured cap (``max_result_bytes``/``result_caps``):
    the front client gets a clear error instead of an answer that could exhaust its (or
    the model's) memory, and the gateway stops reading at the cap."""

    def __init__(self, what: str, limit: int, size: int | None = None) -> None:
        seen = f"{size} bytes" if size is not None else "more"
        super().__init__(
            -32603,
            f"The upstream answer to {what} is too large ({seen}; at most {limit} bytes "
            "pass: raise max_result_bytes or result_caps to allow it)",
            {"limit": limit, **({"size": size} if size is not None else {})},
        )


class FastLane:
    """Modern requests to one ``http://`` upstream URL over a shared pool."""

    def __init__(self, transport: HttpTransport, *, timeout: float | None) -> None:
        if transport.pool is None:
            raise ValueError(f"the fast lane needs a pooled http:// transport ({transport.url})")
        #: The client's transport: its URL, its headers (checked when it was made), and
        #: its rules, which read every answer but the plain JSON one.
        self.transport = transport
        self.pool = transport.pool
        self.host, self.port = transport.address
        self.timeout = timeout
        self.connect_timeout = transport.connect_timeout
        self._request_line = transport.request_line + b"\r\n"
        self._ids = itertools.count(1)
        #: (version, method, name) -> the request's head up to its own headers: the same
        #: few tools are called over and over (bounded: names are the clients').
        self._heads: dict[tuple[str, str, str | None], bytes] = {}
        self._tokens = itertools.count(1)

    @classmethod
    def of(cls, transport: HttpTransport, timeout: float | None) -> FastLane | None:
        """The lane beside a client's HTTP ``transport`` (its URL, headers, pool), or None
        when it has no pool or the pool cannot run here (trio): then every call takes
        the client's wire."""
        if transport.pool is None or not on_asyncio():
            return None
        return cls(transport, timeout=timeout)

    def request(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        meta: dict[str, Any],
        *,
        headers: dict[str, str] | None = None,
        progress: ProgressRelay | None = None,
        limit: int = MAX_ANSWER_BYTES,
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """One request with the client's own ``_meta`` (``meta`` over it), to await: the
        upstream's result, or its error raised (:class:`ResultTooLarge` past ``limit``
        bytes, read no further).  In a CLIENT span when the client traces.  (A plain
        function: the coroutine it returns is the request's own.)"""
        session = client.session
        traced = getattr(session, "traced", False)
        token = f"gw-{next(self._tokens)}" if progress is not None else None
        wire = dict(params)
        wire["_meta"] = own = session.meta(token)
        own.update(meta)
        request_id = next(self._ids)

        def send() -> Coroutine[Any, Any, dict[str, Any]]:
            note_sent(request_id)
            if traced:  # our CLIENT span parents upstream
                own.update(telemetry.inject())
            return self._exchange(method, request_id, wire, headers, progress, token, limit)

        if traced:
            key = client.transport.server_key
            return telemetry.traced(method, params, key, session.version, None, send)
        return send()

    def request_bare(
        self,
        client: Client,
        params: dict[str, Any],
        meta: dict[str, Any],
        headers: dict[str, str] | None,
        limit: int,
        method: str = "tools/call",
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """A call of the gateway's lane shortcut, to await: ``params`` are the caller's
        own, and so is ``meta``, the front client's capabilities and trace context: the
        client's own ``_meta`` is reduced to what identifies it, added to ``meta``, and
        ``meta`` becomes the params' ``_meta``.  No progress, no span.  (A plain
        function: the coroutine it returns is the exchange's own.)"""
        own = client.session.identity()
        if META_LOG_LEVEL in meta:  # the front client's level is the one asked for
            own.pop(META_LOG_LEVEL, None)
        meta.update(own)
        params["_meta"] = meta
        return self._exchange(method, next(self._ids), params, headers, None, None, limit)

    async def _exchange(
        self,
        method: str,
        request_id: int,
        params: dict[str, Any],
        headers: dict[str, str] | None,
        progress: ProgressRelay | None,
        token: str | None,
        limit: int,
    ) -> dict[str, Any]:
        """One request on the pool, its answer read (see :meth:`request`)."""
        body = encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        data = self._head(method, params, headers, len(body)) + body
        try:
            response = await self.pool.request(
                self.host,
                self.port,
                data,
                connect_timeout=self.connect_timeout,
                deadline=self.timeout,
            )
            # Most answers are JSON that came whole with their head: read at once, without
            # the reading coroutines (the connection is back in the pool: not closed).
            plain = response.headers.first(b"content-type") == b"application/json"
            whole = response.read_now(limit) if plain else None
            if whole is not None:
                return self._result(whole, response.status_code, method)
            # Anything else as the client reads it: an SSE answer's progress is relayed to
            # the front request (and keeps a slow call alive), its log messages go to the
            # front client (the client's own relay).
            relay = _extending(response, progress) if progress is not None else None
            call = Call(request_id, method, MODERN_WIRE, progress_token=token, on_progress=relay)
            try:
                answer = await self.transport.read_answer(response, call, limit, relayed=True)
            finally:
                response.close()
            if answer is None:
                raise stream_lost(call)
            return strip_server_info(unwrap_answer(answer, method))
        except DeadlineExceeded:
            raise RequestTimeoutError(method, self.timeout or 0.0) from None
        except httpx.HTTPError as exc:
            url = self.transport.url
            raise http_error(exc, url, f"forwarding {method}", self.connect_timeout) from None
        except MessageTooLargeError:
            raise ResultTooLarge(method, limit) from None

    def _head(
        self,
        method: str,
        params: dict[str, Any],
        extra: dict[str, str] | None,
        length: int,
    ) -> bytes:
        member = _NAME_PARAMS.get(method)
        value = params.get(member) if member else None
        version = params["_meta"].get(META_PROTOCOL_VERSION, "")
        key = (
            version if type(version) is str else str(version),
            method,
            value if type(value) is str else None,
        )
        head = self._heads.get(key)
        if head is None:  # the request line and headers, kept per call shape
            message = {"method": method, "params": params}
            lines = request_headers(message, self.transport.headers, None, None).items()
            head = self._request_line + "".join(f"{k}: {v}\r\n" for k, v in lines).encode("latin-1")
            if len(self._heads) >= _HEADS_MAX:
                self._heads.clear()
            self._heads[key] = head
        if extra:
            head += "".join(f"{k}: {v}\r\n" for k, v in extra.items()).encode("latin-1")
        return head + b"content-length: %d\r\n\r\n" % length

    def _result(self, body: bytes, status: int, method: str) -> dict[str, Any]:
        """The result in a JSON answer's ``body`` without the upstream's server info, or
        its error raised.  (A 200 answer holding a result is read at once; anything else
        as the client reads it, :func:`json_answer`.)"""
        if status == 200:
            try:
                message = decode_relayed(body)
            except DecodeError:
                message = None
            if type(message) is dict and "error" not in message:
                result = message.get("result")
                if type(result) is dict:
                    meta = result.get("_meta")
                    if type(meta) is dict and META_SERVER_INFO in meta:
                        del meta[META_SERVER_INFO]  # (strip_server_info, in place: ours)
                        if not meta:
                            del result["_meta"]
                    return result
        url = self.transport.url
        answer = json_answer(body, status, method, url, relayed=True)
        if answer is None:
            raise ProtocolViolationError(f"{url} answered {method} with an empty body")
        return strip_server_info(unwrap_answer(answer, method))


def _extending(response: PooledResponse, progress: ProgressRelay) -> ProgressRelay:
    """``progress``, each notification also pushing back the exchange's deadline."""

    async def relay(params: dict[str, Any]) -> None:
        response.extend()
        await progress(params)

    return relay


def capped(result: dict[str, Any], what: str, limit: int) -> dict[str, Any]:
    """The answer-size cap on the paths that hand over a parsed result (client, bridged,
    stdio): measured as the JSON it is re-sent as.  The fast lane stops reading at the
    cap itself, so its answers are already within it."""
    size = len(encode(result))
    if size > limit:
        raise ResultTooLarge(what, limit, size)
    return result


async def pass_through(
    upstream: AnyUpstream,
    method: str,
    params: dict[str, Any],
    passed: dict[str, Any],
    *,
    headers: dict[str, str] | None,
    progress: ProgressRelay | None,
    limit: int,
    what: str | None,
    front: FrontCall | None,
    safe: bool,
) -> dict[str, Any]:
    """A modern front call to a modern upstream, passed through untouched
    (``inputRequests``, ``requestState`` and task results flow both ways) with the front's
    ``passed`` meta: over the fast lane when the upstream has one, else (or when the
    upstream refuses the lane's version) through the client.  The answer comes without the
    upstream's server info.  Over ``limit`` bytes it is refused: the lane stops reading
    there; the client's answer is measured (:func:`capped`) unless ``what`` is None (no
    cap was configured, the client's own message limit holds).  ``params`` may hold the
    front's ``_meta``, which is never sent on."""
    lane = upstream.lane
    if lane is not None:
        try:
            return await upstream.call(
                lambda c: lane.request(
                    c, method, params, passed, headers=headers, progress=progress, limit=limit
                ),
                front,
                safe=safe,
            )  # (the lane's answers hold no server info)
        except McpError as exc:
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                raise
            # the client path negotiates another version and retries
    clean = {k: v for k, v in params.items() if k != "_meta"}
    answer = await upstream.call(
        lambda c: c.request(method, clean, meta=passed, headers=headers, on_progress=progress),
        front,
        safe=safe,
    )
    answer = strip_server_info(answer)
    return answer if what is None else capped(answer, what, limit)
