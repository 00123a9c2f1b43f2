"""Small ASGI helpers: header access, bounded body reads, JSON replies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import anyio

# BodyTooLarge and ClientGone are named here too for this package's modules and the
# gateway and serverless adapters, which catch them around read_body_now.
from ...asgi import BodyTooLarge as BodyTooLarge
from ...asgi import ClientGone as ClientGone
from ...asgi import Receive as Receive
from ...asgi import read_chunks
from ...runtime.exchange import Exchange
from ...runtime.runner import resume, run_until_suspended
from ...types import jsonrpc
from ...types.codec import encode
from ...types.errors import McpError

if TYPE_CHECKING:
    from .stream import ResponseWriter

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

JSON_HEADERS = [(b"content-type", b"application/json")]


class HttpExchange(Exchange):
    """An HTTP request's exchange: its notifications go on the request's response stream
    (each era's exchange keeps its own writer)."""

    __slots__ = ()
    network_transport = "tcp"

    if TYPE_CHECKING:

        @property
        def writer(self) -> ResponseWriter:
            """The response the request's messages to the client go on."""

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.writer.message({"jsonrpc": "2.0", "method": method, "params": params})


#: Headers whose repetition makes a request ambiguous (an intermediary may have acted
#: on another copy than the one we read).
_SINGLE = frozenset({"mcp-method", "mcp-name", "mcp-protocol-version", "mcp-session-id"})
REPEATED = "\x00repeated"


def header_map(scope: Scope) -> dict[str, str]:
    """Lower-case header name -> value (latin-1, stripped).  A repeated routing header
    (``Mcp-Method``, ``Mcp-Name``, ...) maps to :data:`REPEATED`, which no validation
    accepts, so the request is refused with -32020 rather than read "last wins".
    Remembers nothing (an app's hot path uses its :class:`HeaderReader`)."""
    raw = scope.get("headers", ())
    out = {name.decode("latin-1").lower(): value.decode("latin-1").strip() for name, value in raw}
    return out if len(out) == len(raw) else _flag_repeats(raw, out)


def _flag_repeats(raw: list[tuple[bytes, bytes]], out: dict[str, str]) -> dict[str, str]:
    seen: set[str] = set()
    for raw_name, _ in raw:
        name = raw_name.decode("latin-1").lower()
        if name in seen and (name in _SINGLE or name.startswith("mcp-param-")):
            out[name] = REPEATED
        seen.add(name)
    return out


class HeaderReader:
    """:func:`header_map` for one app, remembering the text of the header names and of
    the values up to 64 bytes long it has decoded (clients send the same few on every
    request, and a lookup is cheaper than a decode).  Each table holds at most ``limit``
    entries and is emptied when full, so a peer sending new values on every request costs
    a bounded amount of memory; two readers share nothing."""

    __slots__ = ("_limit", "_names", "_values")

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._names: dict[bytes, str] = {}
        self._values: dict[bytes, str] = {}

    def __call__(self, scope: Scope) -> dict[str, str]:
        raw = scope.get("headers", ())
        names, values = self._names, self._values
        out: dict[str, str] = {}
        for raw_name, raw_value in raw:
            name = names.get(raw_name)
            if name is None:
                name = raw_name.decode("latin-1").lower()
                self._remember(names, raw_name, name)
            value = values.get(raw_value)
            if value is None:
                value = raw_value.decode("latin-1").strip()
                if len(raw_value) <= 64:
                    self._remember(values, raw_value, value)
            out[name] = value
        return out if len(out) == len(raw) else _flag_repeats(raw, out)

    def _remember(self, table: dict[bytes, str], raw: bytes, text: str) -> None:
        if len(table) >= self._limit:
            table.clear()
        table[raw] = text


class Rejection(Exception):
    """Raised by an authenticator (or any pre-dispatch hook) to answer the request now:
    ``status`` with a JSON-RPC error body and extra headers (``WWW-Authenticate`` ...)."""

    def __init__(
        self, status: int, error: McpError, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error
        self.headers = headers or []


class BodyTimeout(Exception):
    pass


async def read_body_now(
    receive: Receive, limit: int, declared: str | None, timeout: float | None
) -> bytes:
    """The whole request body, refusing early (:class:`BodyTooLarge`) when it is declared
    or grows larger than ``limit``, or (:class:`BodyTimeout`) takes longer than
    ``timeout`` seconds to arrive (a slow-body client).  At no cost for a body that is
    already there (almost every small request): only when the first ``receive()`` has to
    wait is a cancel scope entered, with the timeout, for the rest of the read.

    Entering the scope after that first step is safe because ``_read_body`` opens no scope
    of its own, and a server's ``receive()`` waits on an event or a queue (uvicorn: an
    ``asyncio.Event``) rather than inside a cancel scope of its own.
    """
    coro = _read_body(receive, limit, declared)
    done, value = run_until_suspended(coro)
    if done:
        return value  # type: ignore[no-any-return]
    if timeout is None:
        return await resume(coro, value)
    with anyio.move_on_after(timeout):
        return await resume(coro, value)
    raise BodyTimeout


async def _read_body(receive: Receive, limit: int, declared: str | None) -> bytes:
    if declared is not None:
        try:
            if int(declared) > limit:
                raise BodyTooLarge
        except ValueError:
            pass
    chunks = await read_chunks(receive, limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def send_bytes(
    send: Send,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": (headers or []) + [(b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_json(
    send: Send,
    status: int,
    payload: object,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send_bytes(send, status, encode(payload), JSON_HEADERS + (headers or []))


async def send_error(
    send: Send,
    status: int,
    err: McpError,
    request_id: jsonrpc.RequestId | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """A JSON-RPC error body a client can show, with an HTTP status a proxy understands."""
    await send_json(send, status, jsonrpc.error(request_id, err), headers)


async def send_empty(
    send: Send, status: int, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send_bytes(send, status, b"", headers)


async def client_gone(receive: Receive) -> None:
    """Return once the client has gone away (``http.disconnect``)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` when the client goes away (run beside a handler or stream)."""
    await client_gone(receive)
    scope.cancel()


#: Media ranges that admit one of the two answer forms.
_ANSWER_RANGES = frozenset(
    ("application/json", "text/event-stream", "application/*", "text/*", "*/*")
)


def accepts_an_answer(accept: str | None) -> bool:
    """Whether a POST's ``Accept`` admits ``application/json`` or ``text/event-stream``
    (the two forms an MCP answer takes).  No header admits anything (RFC 9110); a range
    with ``q=0`` refuses.  A request that admits neither gets 406, as the official SDK
    answers, instead of being executed for an answer the client says it cannot take."""
    if accept is None:
        return True
    if "q=" not in accept and ("application/json" in accept or "text/event-stream" in accept):
        return True  # the usual headers, without parsing
    for item in accept.split(","):
        media, _, params = item.partition(";")
        media = media.strip().lower()
        if media not in _ANSWER_RANGES:
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            return True
    return False


async def serve_lifespan(
    context: AbstractAsyncContextManager[object], receive: Receive, send: Send
) -> None:
    """An ASGI lifespan scope: ``context`` entered at startup, left at shutdown; a
    failure to start is reported, as the ASGI spec asks (the MCP app and the gateway)."""
    message = await receive()
    if message["type"] != "lifespan.startup":
        return
    try:
        await context.__aenter__()
    except Exception as exc:
        await send({"type": "lifespan.startup.failed", "message": repr(exc)})
        return
    await send({"type": "lifespan.startup.complete"})
    message = await receive()
    if message["type"] == "lifespan.shutdown":
        await context.__aexit__(None, None, None)
        await send({"type": "lifespan.shutdown.complete"})
