"""Non-blocking byte I/O on file descriptors for stdio transports.

On asyncio both ends of a stdio connection (``mcpkit serve`` and the client that spawned
it) use :class:`PipeEndpoint` on the loop's pipe transports.  Anything else (trio, a
regular file, a terminal) reads and writes in a worker thread (:func:`thread_reader`,
:func:`thread_writer`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import stat
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio

from ..protocol.framing import DEFAULT_MAX_LINE, frame
from ..runtime.endpoint import Endpoint, NotificationHandler, RequestHandler
from ..runtime.pending import Done, Waiter, settle
from ..types.codec import DecodeError, decode, encode_message
from ..types.errors import McpError
from ..types.jsonrpc import Kind, Message, classify

log = logging.getLogger("mcpkit.endpoint")

CHUNK = 256 * 1024

#: What one read of a pipe asks for: asyncio's pipe transport asks 256 KiB, a buffer
#: glibc serves with mmap (mremap and munmap follow each read); 64 KiB comes from the heap.
READ_SIZE = 64 * 1024


async def thread_reader(fd: int) -> AsyncIterator[bytes]:
    """Chunks from ``fd`` until EOF, each read blocking a worker thread (anything that is
    not a pipe on asyncio: trio, regular files, devices)."""
    while True:
        chunk = await anyio.to_thread.run_sync(os.read, fd, CHUNK, abandon_on_cancel=True)
        if not chunk:
            return
        yield chunk


def is_pipe_like(fd: int) -> bool:
    """Only pipes and sockets go on event-loop pipe transports.  Regular files are
    refused by them (``mcpkit serve x.py < requests.jsonl`` must work), and character
    devices misbehave: uvloop aborts the process on ``> /dev/null`` and drops what was
    written to a terminal when the input ends right away.  Those take the plain path."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


#: Past this many buffered bytes a write waits until the pipe drains.
HIGH_WATER = 64 * 1024


async def open_pipe_writer(fd: int, *, closefd: bool = True) -> asyncio.StreamWriter:
    """A writer on the running loop's pipe transport for ``fd`` (closing it closes ``fd``):
    a write is one non-blocking ``os.write`` when the pipe has room, the transport buffers
    the rest in order."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(fd, "wb", buffering=0, closefd=closefd)
    )
    return asyncio.StreamWriter(transport, protocol, None, loop)


async def drain(writer: asyncio.StreamWriter) -> None:
    """Wait until ``writer``'s pipe took what is buffered; a closed pipe raises."""
    if writer.is_closing():
        raise anyio.BrokenResourceError("output pipe closed")
    await writer.drain()


async def thread_writer(data: bytes, fd: int) -> None:
    """Write ``data`` to ``fd`` whole, each write blocking a worker thread (the
    counterpart of :func:`thread_reader`; bind ``fd`` with :func:`functools.partial`)."""
    view = memoryview(data)
    while view:
        view = view[await anyio.to_thread.run_sync(os.write, fd, view) :]


class _Done(asyncio.Future[bool]):
    """A request's :class:`~mcpkit.runtime.pending.Done` as a plain future: False when
    ``set`` (answered, or the endpoint closed), True when the deadline sweep expired it."""

    __slots__ = ()

    def set(self) -> None:
        if not self.done():
            self.set_result(False)

    def is_set(self) -> bool:
        return self.done()

    def wait(self) -> _Done:
        return self


class PipeEndpoint(Endpoint, asyncio.Protocol):
    """The shared endpoint with an asyncio-native path for writes and our own requests;
    also the protocol of the pipe it reads (:meth:`open_reader`).

    A write is one non-blocking ``os.write`` (the transport buffers what does not fit; only
    past :data:`HIGH_WATER` does a writer wait), so writes need no lock: each message goes
    out whole and in order.  A request waits on a plain future resolved by the reader, its
    deadline kept by one loop timer for all requests (see :meth:`_watch`) instead of anyio
    cancel scopes.  Incoming requests take the shared endpoint's route unchanged.
    """

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        *,
        flush: Callable[[], Awaitable[None]] | None = None,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        super().__init__(self._write_data, on_request, on_notification, max_line=max_line)
        #: The writer's pipe transport, written to directly (the writer only drains).
        self._pipe = writer.transport
        #: Waits for the pipe to drain (the owner's, to put a broken pipe in its words).
        self._flush = flush or functools.partial(drain, writer)
        self._loop = asyncio.get_running_loop()
        self._max_line = max_line
        # What the read callback hands to run(), in order.
        self._backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self._paused = False  # reading stopped: too much handed over and not yet read
        self._busy = False  # run() is still handling a chunk we gave it
        self._partial = False  # the last chunk run() got ended inside a line
        self._eof = False
        self._read_error: OSError | None = None
        self._more: asyncio.Future[None] | None = None
        self._reader: asyncio.ReadTransport | None = None
        self._sweep_timer: asyncio.TimerHandle | None = None
        self._sweep_at = math.inf
        self._new_done = _Done  # a future of the running loop
        self._clock = self._loop.time  # = anyio.current_time(), on a cheaper path

    # ------------------------------------------------------------------ reading
    async def open_reader(self, fd: int, *, closefd: bool = True) -> AsyncIterator[bytes]:
        """Read ``fd`` (closed at the end when ``closefd``) in the loop's read callback; pass
        what this returns to :meth:`run`.

        Answers to our requests are resolved right in the callback: one loop iteration
        less per round trip than a reader task.  Only a chunk of nothing but complete
        responses takes that path, and only while :meth:`run` has nothing of ours pending;
        everything else goes to :meth:`run` as bytes, in arrival order.
        """
        transport, _ = await self._loop.connect_read_pipe(
            lambda: self, os.fdopen(fd, "rb", buffering=0, closefd=closefd)
        )
        if getattr(transport, "max_size", 0) > READ_SIZE:
            setattr(transport, "max_size", READ_SIZE)  # noqa: B010 - not in asyncio's types
        self._reader = transport
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        try:
            while True:
                self._busy = False
                while not self._backlog:
                    if self._read_error is not None:
                        raise self._read_error
                    if self._eof:
                        return
                    self._more = self._loop.create_future()
                    await self._more
                chunk = self._backlog.popleft()
                self._backlog_bytes -= len(chunk)
                if self._paused and self._backlog_bytes < CHUNK and self._reader is not None:
                    self._paused = False
                    self._reader.resume_reading()
                self._busy = True
                yield chunk
        finally:
            self._busy = False
            if self._reader is not None:
                self._reader.close()

    def data_received(self, data: bytes) -> None:
        """A chunk read: settled here when it is nothing but answers to our requests,
        else handed to :meth:`run` (from the first line it cannot settle on)."""
        if (
            data.find(b'"method"') >= 0  # a request or notification (a server's usual)
            or self._backlog
            or self._busy
            or self._partial
            or len(data) > self._max_line
            or not data.endswith(b"\n")
        ):
            self._hand_over(data)
            return
        start = 0
        for line in data.split(b"\n")[:-1]:  # blank lines are skipped, as run() does
            if line.strip() and not self._resolve(line.removesuffix(b"\r")):
                self._hand_over(data[start:])
                return
            start += len(line) + 1

    def _resolve(self, line: bytes) -> bool:
        """Settle the request ``line`` answers; False when it is not simply that."""
        try:
            message = decode(line)
            kind = classify(message)
        except (DecodeError, McpError):
            return False
        if kind is not Kind.RESULT and kind is not Kind.ERROR:
            return False
        pending = self.outgoing.resolve(message)
        if pending is None:  # a stray answer: dropped, or run() passes it to on_stray
            return self.on_stray is None
        settle(pending.waiter, kind, message)
        return True

    def _hand_over(self, data: bytes) -> None:
        self._backlog.append(data)
        self._backlog_bytes += len(data)
        self._partial = not data.endswith(b"\n")
        if self._backlog_bytes > 2 * CHUNK and self._reader is not None and not self._paused:
            self._paused = True
            self._reader.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        """The end of the input (after EOF too: ``eof_received`` keeps the default)."""
        if exc is not None and self._read_error is None:
            self._read_error = exc if isinstance(exc, OSError) else OSError(str(exc))
        self._eof = True
        self._wake()

    def _wake(self) -> None:
        more = self._more
        if more is not None and not more.done():
            more.set_result(None)

    # ------------------------------------------------------------------ writing
    def _buffer(self, data: bytes) -> bool:
        """Write (or buffer) ``data`` now; True when :attr:`_flush` must follow (the pipe
        is full, or closed: flushing then raises the error that explains it)."""
        pipe = self._pipe
        if pipe.is_closing():
            return True
        try:
            pipe.write(data)
        except OSError:
            return True
        return pipe.get_write_buffer_size() > HIGH_WATER

    async def _write_data(self, data: bytes) -> None:
        if self._buffer(data):
            await self._flush()

    def _write_now(self, message: Message) -> bool:
        """Encode and :meth:`_buffer` ``message`` (an unencodable one is dropped)."""
        try:
            data = frame(encode_message(message))
        except ValueError as exc:  # an unencodable notification: drop it, keep the line up
            log.warning("dropping an outgoing %s: %s", message.get("method"), exc)
            return False
        return self._buffer(data)

    async def send(self, message: Message) -> None:
        if self._write_now(message):
            await self._flush()

    def _exchange(self, message: Message, waiter: Waiter) -> Awaitable[bool | None]:
        """Write now and hand back the waiter's future; only a full pipe makes a coroutine
        of it, which the deadline covers too (a peer that stopped reading)."""
        self._watch(min(waiter.deadline, waiter.hard_deadline))
        if self._write_now(message):
            return self._flush_or_done(waiter.done)
        return waiter.done.wait()

    async def _flush_or_done(self, done: Done) -> bool | None:
        """Wait for the pipe to drain, or for the request to end first (its deadline);
        then for the request."""
        waiting = asyncio.ensure_future(done.wait())
        flush = asyncio.ensure_future(self._flush())
        try:
            await asyncio.wait((flush, waiting), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not flush.done():
                flush.cancel()
        if flush.done() and not flush.cancelled():
            flush.result()  # the write's own error
        return await waiting

    def _watch(self, when: float) -> None:
        """Make sure a sweep runs by ``when``: one timer for every request, moved only for
        an earlier deadline (nearly every request ends long before its deadline)."""
        if when < self._sweep_at:
            if self._sweep_timer is not None:
                self._sweep_timer.cancel()
            self._sweep_at = when
            self._sweep_timer = self._loop.call_at(when, self._sweep)

    def _sweep(self) -> None:
        """Expire the requests whose deadline passed; wait for the next one."""
        self._sweep_timer = None
        self._sweep_at = math.inf
        now = self._loop.time() + 1e-6
        nearest = math.inf
        for pending in self.outgoing.pending():
            waiter = pending.waiter
            done = waiter.done
            if not isinstance(done, _Done) or done.done():
                continue
            limit = min(waiter.deadline, waiter.hard_deadline)  # progress moves it on
            if limit <= now:
                done.set_result(True)
            elif limit < nearest:
                nearest = limit
        if nearest != math.inf:
            self._watch(nearest)
