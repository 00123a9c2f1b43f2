"""stdio server transport: newline-delimited JSON-RPC on stdin/stdout, both eras.

Modern requests (``_meta`` with a protocol version) are answered statelessly and
concurrently; ``initialize`` starts the process's one legacy session.  The protocol pipes
are moved off file descriptors 0 and 1 first, so a stray ``print`` or a child process
cannot corrupt the stream: fd 1 then points at stderr and fd 0 at /dev/null.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import sniffio

from ..protocol.negotiation import modern_version_of, parse_modern_meta
from ..runtime.contracts import ServedServer
from ..runtime.endpoint import Endpoint
from ..runtime.exchange import Exchange
from ..runtime.legacy_session import SESSION_HOLDERS, LegacySession
from ..runtime.listen import ServedSubscription, legacy_notification_for
from ..types.errors import McpError, method_not_found
from ..types.jsonrpc import Message
from ..types.methods import METHODS
from .stdio_io import PipeEndpoint, is_pipe_like, open_pipe_writer, thread_reader, thread_writer


class _StdioExchange(Exchange):
    __slots__ = ("endpoint", "legacy_requests")
    network_transport = "pipe"

    def __init__(self, endpoint: Endpoint, legacy_requests: bool) -> None:
        self.endpoint = endpoint
        self.legacy_requests = legacy_requests

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.endpoint.notify(method, params)

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        if not self.legacy_requests:
            return await super().request(method, params, timeout)
        return await self.endpoint.request(method, params, timeout=timeout or 300.0)


class StdioServer:
    """Serves one :class:`Server` over a pair of file descriptors."""

    def __init__(self, server: ServedServer) -> None:
        self.server = server
        self.session: LegacySession | None = None
        # (endpoint, its modern exchange, its legacy exchange): they hold nothing per
        # request, so one of each per endpoint serves every request.
        self._exchanges: tuple[Endpoint, _StdioExchange, _StdioExchange] | None = None
        SESSION_HOLDERS.add(self)

    def _exchange(self, endpoint: Endpoint, legacy: bool) -> _StdioExchange:
        cached = self._exchanges
        if cached is None or cached[0] is not endpoint:
            cached = (endpoint, _StdioExchange(endpoint, False), _StdioExchange(endpoint, True))
            self._exchanges = cached
        return cached[2] if legacy else cached[1]

    def live_legacy_sessions(self) -> tuple[LegacySession, ...]:
        """This server's one legacy session, if a client opened it (the sessions gauge)."""
        return () if self.session is None else (self.session,)

    async def on_request(self, message: Message, endpoint: Endpoint) -> dict[str, Any] | None:
        params = message.get("params")
        method: str = message["method"]
        if modern_version_of(params) is not None and self.server.modern_versions:
            meta = parse_modern_meta(params, self.server.modern_versions)
            spec = METHODS.get(method) or self.server.custom_specs.get(method)
            if spec is None or "modern" not in spec.eras:
                raise method_not_found(method)
            if method == "subscriptions/listen":
                return await self._listen(message, endpoint)
            return await self.server.dispatch(message, meta, self._exchange(endpoint, False))
        if self.session is None:
            self.session = LegacySession()
        first = method == "initialize" and not self.session.initialized
        result = await self.session.handle_request(
            self.server, message, self._exchange(endpoint, True)
        )
        if first:
            endpoint.spawn(self._legacy_events, endpoint, self.session)
        return result

    async def _listen(self, message: Message, endpoint: Endpoint) -> dict[str, Any] | None:
        subscription = ServedSubscription(self.server, message["id"], message.get("params") or {})
        with self.server.bus.listen(resources=subscription.resources) as listener:
            await endpoint.send(subscription.acknowledgement())
            while True:
                note = subscription.notification_for(await listener.next())
                if note is not None:
                    await endpoint.send(note)

    async def _legacy_events(self, endpoint: Endpoint, session: LegacySession) -> None:
        with self.server.bus.listen() as listener:
            while endpoint.closed is None:
                event = await listener.next()
                note = legacy_notification_for(event, session.subscriptions, session.id)
                if note is not None:
                    await endpoint.send(note)

    async def on_notification(self, message: Message, endpoint: Endpoint) -> None:
        if self.session is not None:
            self.session.on_notification(message)
        await self.server.dispatch_notification(message, session=self.session)

    async def serve(self, in_fd: int, out_fd: int) -> None:
        """Pipes on asyncio: a :class:`PipeEndpoint` reads and writes them on the loop;
        anything else (trio, a regular file, a terminal) a worker thread per read or write."""
        chunks: AsyncIterator[bytes] = thread_reader(in_fd)
        if sniffio.current_async_library() == "asyncio" and is_pipe_like(out_fd):
            writer = await open_pipe_writer(out_fd, closefd=False)
            piped = PipeEndpoint(writer, self.on_request, self.on_notification)
            if is_pipe_like(in_fd):
                chunks = await piped.open_reader(in_fd, closefd=False)
            endpoint: Endpoint = piped
        else:
            write = functools.partial(thread_writer, fd=out_fd)
            endpoint = Endpoint(write, self.on_request, self.on_notification)
        await self.serve_on(endpoint, chunks)

    async def serve_on(self, endpoint: Endpoint, chunks: AsyncIterator[bytes]) -> None:
        """Serve over any byte stream: ``chunks`` in, ``endpoint`` out.  The fd pipes above
        and the in-memory transport (:mod:`mcpkit.transports.memory`) both come here, so a
        test over memory runs exactly the code a stdio server runs: the same reader loop,
        the same request runner (``runtime.runner``); a :class:`PipeEndpoint` differs only
        in how it reads and writes the pipes and waits for answers to its own requests."""
        endpoint.drain_on_eof = True
        async with self.server.running():
            await endpoint.run(chunks)


def claim_stdio() -> tuple[int, int]:
    """Take the protocol pipes off fds 0/1 so nothing else can read or write them."""
    sys.stdout.flush()
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return in_fd, out_fd


async def serve_stdio(
    server: ServedServer, *, claim: bool = True, fds: tuple[int, int] | None = None
) -> None:
    """Serve ``server`` on this process's stdin/stdout until stdin closes (``fds``: pipes
    already taken with :func:`claim_stdio`)."""
    if fds is not None:
        in_fd, out_fd = fds
    else:
        in_fd, out_fd = claim_stdio() if claim else (0, 1)
    await StdioServer(server).serve(in_fd, out_fd)


def run_stdio(server: ServedServer, **kw: Any) -> None:
    backend_options = {"use_uvloop": True} if _has_uvloop() else {}
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(
            lambda: serve_stdio(server, **kw), backend="asyncio", backend_options=backend_options
        )


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["McpError", "StdioServer", "run_stdio", "serve_stdio"]
