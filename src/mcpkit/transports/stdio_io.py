"""Non-blocking byte I/O on file descriptors for stdio transports.

On asyncio we use the loop's pipe transports (no thread hop per read: a thread hop costs
more than the whole rest of a small request).  On other anyio backends a worker thread
does the blocking reads and writes.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import sniffio

CHUNK = 256 * 1024


async def _asyncio_reader(fd: int) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.connect_read_pipe(
        lambda: protocol, os.fdopen(fd, "rb", buffering=0, closefd=False)
    )
    try:
        while True:
            chunk = await reader.read(CHUNK)
            if not chunk:
                return
            yield chunk
    finally:
        transport.close()


async def _thread_reader(fd: int) -> AsyncIterator[bytes]:
    while True:
        chunk = await anyio.to_thread.run_sync(os.read, fd, CHUNK, abandon_on_cancel=True)
        if not chunk:
            return
        yield chunk


def _is_pipe_like(fd: int) -> bool:
    """Event-loop pipe transports accept pipes, sockets and terminals, not regular files
    (uvloop even aborts the process): ``mcpkit serve x.py < requests.jsonl`` must work."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def read_chunks(fd: int) -> AsyncIterator[bytes]:
    """Chunks from ``fd`` until EOF."""
    if sniffio.current_async_library() == "asyncio" and _is_pipe_like(fd):
        return _asyncio_reader(fd)
    return _thread_reader(fd)


async def fd_writer(fd: int) -> Callable[[bytes], Awaitable[None]]:
    """An async ``write(data)`` for ``fd`` that waits when the pipe is full."""
    if sniffio.current_async_library() == "asyncio" and _is_pipe_like(fd):
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(fd, "wb", buffering=0, closefd=False)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)

        async def write_asyncio(data: bytes) -> None:
            if transport.is_closing():
                raise anyio.BrokenResourceError("output pipe closed")
            writer.write(data)
            if transport.get_write_buffer_size() > 64 * 1024:
                await writer.drain()

        return write_asyncio

    async def write_thread(data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = await anyio.to_thread.run_sync(os.write, fd, view)
            view = view[written:]

    return write_thread
