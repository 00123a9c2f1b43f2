"""What comes back over Streamable HTTP, decoded once, and httpx failures put into words.

Kept apart from :mod:`.client_http` (which decides *what to do*: sessions, resumption,
cancellation) so that the rules for reading an answer live in one place, whichever wire
brought it (an :class:`Answer`: httpx's response, or the pool's
:class:`~.http11.PooledResponse`):

* ``application/json``: exactly one JSON-RPC response.  A JSON-RPC error body is a
  :class:`ServerError` whatever the HTTP status (servers send -32602 with 400, -32601 with
  404, -32603 with 500); an error status without such a body is an
  :class:`HttpStatusError`; garbage is a :class:`ProtocolViolationError`.
* ``text/event-stream``: events parsed by :class:`~mcpkit.protocol.sse.SseDecoder` as
  the bytes arrive; empty ``data`` (priming events, keep-alives) skipped; ``id:`` and
  ``retry:`` remembered for resumption; an event that is not JSON-RPC is a protocol
  violation (the stream is unusable after it).
* Sizes are bounded while they are read, never after: a ``Content-Length`` over the
  limit is refused before the body is read, a body without one is counted as it
  arrives, and an SSE line or event is refused as soon as it passes the limit.  Each is a
  :class:`MessageTooLargeError` naming the limit; leaving the response unread closes
  its connection, so the server stops sending.
"""

from __future__ import annotations

import contextlib
import math
import ssl
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import httpx
from anyio.abc import TaskStatus

from ..protocol.sse import SseDecoder, SseEvent, SseLimitError
from ..types import jsonrpc
from ..types.codec import DecodeError, decode, decode_relayed
from ..types.errors import McpError
from ..types.jsonrpc import Kind, Message, RequestId
from .client_base import (
    ConnectError,
    ConnectionClosedError,
    HttpStatusError,
    MessageTooLargeError,
    ProgressHandler,
    ProtocolViolationError,
    ServerError,
    TransportError,
)
from .client_http_era import WireEra

if TYPE_CHECKING:
    from .http11 import PooledResponse

#: One HTTP answer as the reading rules below see it, whichever wire brought it.
Answer: TypeAlias = "httpx.Response | PooledResponse"


@contextlib.contextmanager
def started_once(task_status: TaskStatus[None]) -> Iterator[Callable[[], None]]:
    """A once-only ``task_status.started()`` (called on the way out at the latest)."""
    done = False

    def started() -> None:
        nonlocal done
        if not done:
            done = True
            task_status.started()

    try:
        yield started
    finally:
        started()


@dataclass(slots=True)
class Call:
    """One request in flight: how to recognise its answer, extend it, and resume it."""

    request_id: RequestId
    method: str
    #: The message's era: which HTTP rules apply to it (:mod:`.client_http_era`).
    era: WireEra
    timeout: float | None = None
    hard_deadline: float = math.inf
    scope: anyio.CancelScope | None = None
    progress_token: Any = None
    on_progress: ProgressHandler | None = None
    last_event_id: str | None = None
    retry_ms: int | None = None
    #: Why the stream ended early (connection dropped), for the error message.
    broken: str | None = None
    #: The answer, when it arrived on another stream (a legacy server's GET stream).
    routed: Message | None = None
    arrived: anyio.Event = field(default_factory=anyio.Event)

    def deliver(self, message: Message) -> None:
        self.routed = message
        self.arrived.set()


def is_sse(response: Answer) -> bool:
    ctype = response.headers.get("content-type") or ""
    return ctype.partition(";")[0].strip().lower() == "text/event-stream"


async def read_body(response: Answer, limit: int, what: str) -> bytes:
    """The whole body of ``response`` (the answer to ``what``), refused past ``limit``
    bytes: by its ``Content-Length`` before a byte is read, else as it arrives."""
    declared = declared_length(response.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise too_large(what, limit, f"its Content-Length is {declared}")
    buffer = bytearray()
    async for chunk in response.aiter_bytes():
        buffer += chunk
        if len(buffer) > limit:
            raise too_large(what, limit)
    return bytes(buffer)


async def body_start(response: Answer, size: int) -> bytes:
    """At most the first ``size`` bytes of the body (for an error message); the rest is
    left unread, which closes the connection."""
    buffer = bytearray()
    async for chunk in response.aiter_bytes():
        buffer += chunk
        if len(buffer) >= size:
            break
    return bytes(buffer[:size])


def declared_length(value: str | None) -> int | None:
    """A ``Content-Length`` header's value as a number (None: absent or not a number;
    httpx itself refuses a malformed one as it reads)."""
    text = value.strip() if value is not None else ""
    return int(text) if text.isascii() and text.isdigit() else None


def too_large(what: str, limit: int, detail: str = "") -> MessageTooLargeError:
    more = f"; {detail}" if detail else ""
    return MessageTooLargeError(
        f"the answer to {what} is larger than max_message_bytes ({limit} bytes{more}); "
        "stopped reading and closed the connection",
        limit,
    )


def json_answer(
    body: bytes, status: int, method: str, url: str, *, relayed: bool = False
) -> Message | None:
    """The JSON-RPC response in a plain body (None when the body is empty and the status
    is not an error); raises for error responses and for anything else (naming the
    status and ``url``).  ``relayed``: the caller passes the answer on re-encoded (the
    gateway's fast lane), so it is read without the repeated-member check
    (:func:`~mcpkit.types.codec.decode_relayed`)."""
    if not body.strip():
        if status >= 400:
            raise HttpStatusError(f"{method}: {_where(status, url)}", status)
        return None
    try:
        message = decode_relayed(body) if relayed else decode(body)
    except DecodeError:
        snippet = _snippet(body)
        if status >= 400:
            raise HttpStatusError(
                f"{method}: {_where(status, url)}: {snippet}", status, snippet
            ) from None
        raise ProtocolViolationError(
            f"the server answered {method} with invalid JSON: {snippet!r}"
        ) from None
    if isinstance(message, dict) and ("result" in message or "error" in message):
        if "error" in message:
            raise ServerError.from_wire(message["error"], method=method, http_status=status)
        return message
    snippet = _snippet(body)
    if status >= 400:
        raise HttpStatusError(f"{method}: {_where(status, url)}: {snippet}", status, snippet)
    raise ProtocolViolationError(f"the answer to {method} is not a JSON-RPC response: {snippet!r}")


def _where(status: int, url: str) -> str:
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase} from {url}"
    except ValueError:
        return f"HTTP {status} from {url}"


def _snippet(body: bytes) -> str:
    """The start of a body an error message quotes (decoded only when one is raised)."""
    return body[:300].decode("utf-8", "replace")


def event_message(data: str, sender: str, method: str, detail: str = "") -> tuple[Kind, Message]:
    """One SSE event's JSON-RPC message and its kind; anything else is the ``sender``'s
    protocol violation on the stream of ``method``."""
    try:
        message = decode(data)
        return jsonrpc.classify(message), message
    except (DecodeError, McpError) as exc:
        raise ProtocolViolationError(
            f"{sender} sent an event that is not JSON-RPC on the stream of {method} ({exc}){detail}"
        ) from None


async def sse_events(chunks: AsyncIterable[bytes], limit: int) -> AsyncGenerator[SseEvent, None]:
    """The events of an SSE body given as byte chunks, each line and event measured as it
    arrives (:class:`~mcpkit.protocol.sse.SseLimitError` past ``limit``).  Close it
    (``contextlib.aclosing``) when leaving before the end."""
    decoder = SseDecoder(limit)
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event


async def sse_messages(
    response: Answer, call: Call, limit: int
) -> AsyncGenerator[tuple[Kind, Message], None]:
    """Decoded JSON-RPC messages of an SSE stream; remembers ``id:`` and ``retry:``.

    A dropped connection ends the iteration (recorded in ``call.broken``) rather than
    raising: whether that is fatal depends on the era and on resumability.  A line or an
    event over ``limit`` bytes raises :class:`MessageTooLargeError` as soon as it passes
    the limit.
    """
    events = sse_events(response.aiter_bytes(), limit)
    try:
        async with contextlib.aclosing(events):
            async for event in events:
                if event.id:
                    call.last_event_id = event.id
                if event.retry is not None:
                    call.retry_ms = event.retry
                data = event.data
                if not data.strip():
                    continue
                yield event_message(data, "the server", call.method, f": {data[:200]!r}")
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        call.broken = f"connection dropped: {exc or type(exc).__name__}"
    except SseLimitError as exc:
        raise MessageTooLargeError(
            f"the server sent an SSE {exc.what} on the stream of {call.method} larger than "
            f"max_message_bytes ({limit} bytes); stopped reading and closed the stream",
            limit,
        ) from None


def stream_lost(call: Call) -> ConnectionClosedError:
    """The error of a request whose stream ended without its answer, not to be resumed."""
    why = f" ({call.broken})" if call.broken else ""
    return ConnectionClosedError(
        f"the server closed the response stream of {call.method} before answering{why}; "
        "the request is lost (re-issue it to retry)"
    )


def unwrap_answer(answer: Message, method: str) -> dict[str, Any]:
    if "error" in answer:
        raise ServerError.from_wire(answer["error"], method=method)
    result = answer.get("result")
    if not isinstance(result, dict):
        raise ProtocolViolationError(
            f"the result of {method} is not an object: {str(result)[:200]}"
        )
    return result


@contextlib.contextmanager
def http_errors(url: str, doing: str, connect_timeout: float) -> Iterator[None]:
    """httpx exceptions -> client errors that name the URL and what we were doing."""
    try:
        yield
    except httpx.HTTPError as exc:
        raise http_error(exc, url, doing, connect_timeout) from None


def http_error(
    exc: httpx.HTTPError, url: str, doing: str, connect_timeout: float
) -> TransportError:
    """The client error for an httpx exception (the pool raises httpx's types too)."""
    if isinstance(exc, httpx.ConnectTimeout):
        return ConnectError(
            f"cannot connect to {url} ({doing}): no answer within {connect_timeout:g}s"
        )
    if isinstance(exc, httpx.ConnectError):
        return ConnectError(f"cannot connect to {url} ({doing}): {exc}")
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return ConnectionClosedError(
            f"the connection to {url} failed while {doing}: {exc or type(exc).__name__}"
        )
    return ConnectionClosedError(f"HTTP error while {doing} ({url}): {exc or type(exc).__name__}")


_SSL_CONTEXT: list[ssl.SSLContext] = []


def shared_ssl_context() -> ssl.SSLContext:
    """httpx's default certificate-verifying context, made once per process.

    httpx builds a new one for every client created with ``verify=True``, loading the
    whole CA bundle again, which was nearly all of a gateway's memory per upstream
    (``python -m bench.scale_gateway``).  A context is only read once made, so every
    client can share it."""
    if not _SSL_CONTEXT:
        _SSL_CONTEXT.append(httpx.create_ssl_context())
    return _SSL_CONTEXT[0]
