"""Client transport for the 2024-11-05 HTTP+SSE transport (deprecated, still deployed).

The server's messages arrive on one long-lived ``GET`` (``text/event-stream``): the first
event is ``endpoint``, whose data is the URI to ``POST`` our messages to; every later
``message`` event carries one JSON-RPC message (responses, server requests,
notifications).  A ``POST`` is only acknowledged (``202 Accepted``); its answer comes on
the stream.  That is a JSON-RPC line stream with a different carrier, so it runs on the
same :class:`~mcpkit.runtime.endpoint.Endpoint` as stdio: each event's data becomes one
line for the endpoint (decoded once there), each line the endpoint writes becomes one
POST.  Ids, timeouts, progress, ``notifications/cancelled`` and answers to server
requests (POSTed back) are the endpoint's, and the client side is the shared
:class:`~mcpkit.transports.client_endpoint.EndpointClientTransport`.

Decisions:

* The ``endpoint`` URI must have the stream's origin (scheme, host, port): a server must
  not be able to send our messages, with our headers and credentials, somewhere else.
* The stream ending, or a POST failing (a 404 means the server forgot the session), ends
  the connection: pending requests fail with :class:`ConnectionClosedError` saying why.
  This transport has no resumption (the 2024-11-05 spec defines none).
* SSE parsing is :class:`~mcpkit.protocol.sse.SseDecoder`'s, bounded: a line or an event
  over ``max_message_bytes`` ends the connection as soon as it passes the limit, with an
  error naming it (never assembled first).  Raw newlines in an event's data can only sit
  between JSON tokens (inside strings they must be escaped), so joining the data lines
  with spaces keeps every message on one line without changing it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Mapping
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from ..protocol.sse import SseEvent, SseLimitError
from ..runtime.endpoint import Endpoint
from .client_base import (
    ConnectError,
    HttpStatusError,
    MessageTooLargeError,
    ProtocolViolationError,
)
from .client_endpoint import EndpointClientTransport
from .client_http_wire import body_start, is_sse, read_body, sse_events

log = logging.getLogger("mcpkit.client.sse")


class SseTransport(EndpointClientTransport):
    """``async with SseTransport("http://127.0.0.1:8000/sse") as t``: one legacy
    connection (the server's session lives as long as the GET stream)."""

    kind = "sse"

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        connect_timeout: float = 10.0,
        max_message_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        super().__init__()
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        #: What each request passes as httpx's ``auth``: ours when given, else the client's
        #: own (a per-request ``auth=None`` would turn a given client's auth off).
        self._request_auth = auth if auth is not None else httpx.USE_CLIENT_DEFAULT
        self.connect_timeout = connect_timeout
        #: The most one SSE line or event (one message) may hold; more ends the connection.
        self.max_message_bytes = max_message_bytes
        self.server_key = "sse:" + url
        self.messages_url: str | None = None
        self._given_client = http_client
        self._client: httpx.AsyncClient | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._failure: str | None = None
        self._stream: httpx.Response | None = None

    async def __aenter__(self) -> SseTransport:
        stack = contextlib.AsyncExitStack()
        try:
            client = self._given_client
            if client is None:
                client = await stack.enter_async_context(
                    httpx.AsyncClient(
                        timeout=httpx.Timeout(30.0, read=None), follow_redirects=False
                    )
                )
            self._client = client
            with anyio.fail_after(self.connect_timeout):
                # No read timeout on the stream, even on a given client: it is quiet
                # whenever the server has nothing to say.
                response = self._stream = await stack.enter_async_context(
                    client.stream(
                        "GET",
                        self.url,
                        headers={
                            **self.headers,
                            "Accept": "text/event-stream",
                            "Cache-Control": "no-store",
                        },
                        auth=self._request_auth,
                        timeout=httpx.Timeout(30.0, read=None),
                    )
                )
                events = sse_events(response.aiter_bytes(), self.max_message_bytes)
                stack.push_async_callback(events.aclose)
                self.messages_url = await self._handshake(response, events)
        except TimeoutError:
            await stack.aclose()
            raise ConnectError(
                f"{self.url} sent no 'endpoint' event within "
                f"{self.connect_timeout:g}s: not an HTTP+SSE server?"
            ) from None
        except httpx.HTTPError as exc:
            await stack.aclose()
            raise ConnectError(f"cannot open the SSE stream at {self.url}: {exc}") from None
        except BaseException:
            await stack.aclose()
            raise
        endpoint = Endpoint(self._post, self._serve_request, self._notification)
        endpoint.on_invalid = self._junk
        self._stack = stack
        tg = await self._open(endpoint)
        tg.start_soon(self._read, endpoint, events)
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        if self._tg is None:
            return None
        await super().__aexit__(*exc)
        if self._stack is not None:  # closing the GET ends the server's session
            with (
                anyio.CancelScope(shield=True),
                anyio.move_on_after(2),
                contextlib.suppress(Exception),
            ):
                await self._stack.aclose()
        return None

    async def _handshake(
        self, response: httpx.Response, events: AsyncGenerator[SseEvent, None]
    ) -> str:
        if response.status_code != 200:
            body = (await body_start(response, 500)).decode("utf-8", "replace")
            raise HttpStatusError(
                f"GET {self.url} answered HTTP {response.status_code}", response.status_code, body
            )
        if not is_sse(response):
            kind = response.headers.get("content-type", "").partition(";")[0].strip()
            raise ProtocolViolationError(
                f"GET {self.url} answered {kind or 'no content type'}, not an SSE stream"
            )
        try:
            first = await events.__anext__()
        except StopAsyncIteration as exc:
            raise ProtocolViolationError(
                f"the SSE stream at {self.url} ended before its 'endpoint' event"
            ) from exc
        except SseLimitError as exc:
            raise self._too_large(exc) from None
        if first.event != "endpoint" or not first.data.strip():
            raise ProtocolViolationError(
                f"the first event at {self.url} is {first.event!r}, not 'endpoint': "
                f"not a 2024-11-05 HTTP+SSE server"
            )
        target = urljoin(self.url, first.data.strip())
        ours, theirs = urlsplit(self.url), urlsplit(target)
        if (ours.scheme, ours.netloc) != (theirs.scheme, theirs.netloc):
            raise ProtocolViolationError(
                f"the server at {self.url} asked us to post to another origin ({target}); refused"
            )
        return str(target)

    def _too_large(self, exc: SseLimitError) -> MessageTooLargeError:
        return MessageTooLargeError(
            f"{self.url} sent an SSE {exc.what} larger than max_message_bytes "
            f"({exc.limit} bytes); stopped reading and closed the stream",
            exc.limit,
        )

    async def _read(self, endpoint: Endpoint, events: AsyncGenerator[SseEvent, None]) -> None:
        async def lines() -> AsyncGenerator[bytes, None]:
            try:
                async for event in events:
                    if event.event == "message" and event.data:
                        yield event.data.replace("\n", " ").encode() + b"\n"
                    elif event.event not in ("message", "ping"):
                        log.debug("ignoring SSE event %r from %s", event.event, self.url)
            except httpx.HTTPError as exc:
                self._failure = self._failure or f"the SSE stream broke: {exc}"
            except SseLimitError as exc:
                self._failure = self._failure or str(self._too_large(exc))
                await self._close_stream()

        await endpoint.run(lines())
        if self._failure is not None and endpoint.closed is not None:
            endpoint.closed = self._failure

    async def _close_stream(self) -> None:
        """Abandon the GET stream now (the server stops sending; its session ends)."""
        if self._stream is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await self._stream.aclose()

    async def _post(self, data: bytes) -> None:
        client, url = self._client, self.messages_url
        assert client is not None and url is not None
        try:
            async with client.stream(
                "POST",
                url,
                content=data,
                auth=self._request_auth,
                headers={**self.headers, "Content-Type": "application/json"},
            ) as response:
                if response.status_code >= 400:
                    text = (await body_start(response, 200)).decode("utf-8", "replace")
                    self._fail(f"POST {url} answered HTTP {response.status_code}: {text}")
                    raise anyio.BrokenResourceError
                # (read to its end, bounded: the connection is reused)
                await read_body(response, self.max_message_bytes, "a POST")
        except httpx.HTTPError as exc:
            self._fail(f"POST {url} failed: {exc}")
            raise anyio.BrokenResourceError from None
        except MessageTooLargeError as exc:
            self._fail(f"POST {url}: {exc}")
            raise anyio.BrokenResourceError from None

    def _fail(self, why: str) -> None:
        self._failure = self._failure or why
        if self._endpoint is not None:
            self._endpoint.close(why)

    def _junk(self, line: bytes, why: str) -> None:
        log.warning(
            "%s sent an SSE message that is not JSON-RPC (%s): %r", self.url, why, line[:200]
        )

    async def _closed_detail(self, doing: str) -> str:
        why = self._failure or "the server ended the SSE stream"
        return f"{why} (while {doing}; {self.url})"

    def describe(self) -> str:
        return f"HTTP+SSE server {self.url} (posting to {self.messages_url})"


__all__ = ["SseTransport"]
