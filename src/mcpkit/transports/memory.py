"""In-memory transport: a client and a :class:`Server` object in one event loop.

``Client(server)`` uses it, so tests of a server's behaviour run in milliseconds without a
process or a socket.  It is *not* a shortcut to the handlers: two anyio memory streams of
bytes stand in for a child process's pipes, and each side runs the code a stdio
connection runs.  The server side is :class:`~mcpkit.transports.stdio.StdioServer` (era
detection per request, the legacy session started by ``initialize``, server->client
requests, listen streams, cancellation); the client side is the shared
:class:`~mcpkit.transports.client_endpoint.EndpointClientTransport`.  Every message is
encoded by the codec, framed as a line and decoded on the other side, so what a test
sees is what a stdio client would see: ``_meta`` as sent, sealed ``requestState`` echoed
verbatim through MRTR rounds, errors as wire errors.

What it does not exercise is the process boundary itself (spawning, signals, stderr, the
fd juggling of ``mcpkit serve``) and HTTP; tests about those keep real processes and
sockets.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..runtime.contracts import ServedServer
from ..runtime.endpoint import Endpoint
from .client_endpoint import EndpointClientTransport
from .stdio import StdioServer

log = logging.getLogger("mcpkit.client.memory")

#: Lines in flight each way before a writer waits, like a pipe's buffer: a side that
#: stops reading holds the other one up instead of growing memory without bound.
_BUFFER = 64


class MemoryTransport(EndpointClientTransport):
    """Serve ``server`` in this event loop and talk to it as a stdio client would.

    ``async with MemoryTransport(server) as t`` starts the server side (its lifespan
    included, shared with other transports serving the same object) and stops it on exit.
    Usually reached through ``Client(server)``.
    """

    kind = "memory"

    def __init__(self, server: ServedServer, *, shutdown_grace: float = 5.0) -> None:
        super().__init__()
        self.server = server
        self.shutdown_grace = shutdown_grace
        name = server.info.get("name", "server") if isinstance(server.info, dict) else "server"
        self.server_key = f"memory:{name}@{id(server):x}"
        self._to_server: MemoryObjectSendStream[bytes] | None = None
        self._server_done = anyio.Event()
        self._server_failure: BaseException | None = None

    async def __aenter__(self) -> MemoryTransport:
        to_server, server_in = anyio.create_memory_object_stream[bytes](_BUFFER)
        to_client, client_in = anyio.create_memory_object_stream[bytes](_BUFFER)
        self._to_server = to_server
        served = StdioServer(self.server)
        server_end = Endpoint(_writer(to_client), served.on_request, served.on_notification)
        client_end = Endpoint(self._write, self._serve_request, self._notification)
        tg = await self._open(client_end)
        tg.start_soon(self._run_server, served, server_end, server_in, to_client)
        tg.start_soon(self._run_client, client_end, client_in)
        return self

    async def _shutdown(self) -> None:
        await super()._shutdown()
        if self._to_server is not None:
            self._to_server.close()  # EOF for the server, as closing stdin would be
        with anyio.move_on_after(self.shutdown_grace):
            await self._server_done.wait()

    async def _run_server(
        self,
        served: StdioServer,
        endpoint: Endpoint,
        chunks: MemoryObjectReceiveStream[bytes],
        out: MemoryObjectSendStream[bytes],
    ) -> None:
        try:
            with out, chunks:
                await served.serve_on(endpoint, chunks)
        except Exception as exc:  # e.g. a lifespan that fails: explained to the client
            log.exception("the in-memory server failed")
            self._server_failure = exc
        finally:
            self._server_done.set()

    async def _run_client(
        self, endpoint: Endpoint, chunks: MemoryObjectReceiveStream[bytes]
    ) -> None:
        with chunks:
            await endpoint.run(chunks)

    async def _write(self, data: bytes) -> None:
        stream = self._to_server
        assert stream is not None
        try:
            await stream.send(data)
        except anyio.ClosedResourceError:
            raise anyio.BrokenResourceError from None  # see EndpointClientTransport

    async def _closed_detail(self, doing: str) -> str:
        failure = self._server_failure
        if failure is not None:
            return f"the in-memory server failed while {doing}: {type(failure).__name__}: {failure}"
        return f"the in-memory server stopped while {doing}"

    def describe(self) -> str:
        state = "stopped" if self._server_done.is_set() else "running"
        return f"in-memory server {self.server_key} ({state})"


def _writer(stream: MemoryObjectSendStream[bytes]) -> Callable[[bytes], Awaitable[None]]:
    """The server's writes: at once while the buffer has room (as a pipe write is, so a
    reply does not make its request wait), else when the client has read."""

    async def write(data: bytes) -> None:
        try:
            try:
                stream.send_nowait(data)
            except anyio.WouldBlock:
                await stream.send(data)
        except anyio.ClosedResourceError:
            raise anyio.BrokenResourceError from None  # the endpoint drops such replies

    return write


__all__ = ["MemoryTransport"]
