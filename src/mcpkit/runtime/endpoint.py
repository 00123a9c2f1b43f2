"""One JSON-RPC endpoint over a byte stream, for every role.

Client, server, host and gateway differ only in the handlers they pass in.  The endpoint
frames and decodes lines (once), answers malformed input with the right error, runs each
incoming request through the request runner (``notifications/cancelled`` cancels it), sends
our own requests with fresh ids and matches their responses, and fails everything still
pending with one clear error when the stream ends.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..protocol.correlation import Incoming, Outgoing, cancelled_request_id, progress_token_of
from ..protocol.framing import LineFramer, Overflow, frame
from ..types import jsonrpc
from ..types.codec import DecodeError, DuplicateKeyError, decode, encode_message
from ..types.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, McpError
from ..types.jsonrpc import Kind, Message, RequestId
from .pending import Done, EndpointClosed, Explain, RequestTimeout, Waiter, arm, settle
from .runner import Handle, Runner, new_runner

log = logging.getLogger("mcpkit.endpoint")

#: How long run() waits, after the input ends, for requests still writing their replies.
JOIN_GRACE_S = 5.0
#: How long requests in flight at a server's stdin EOF may take to finish (see
#: ``Endpoint.drain_on_eof``): enough for a quick tool in a worker thread, short enough
#: that a server still exits promptly when its client goes away (a long call is cancelled).
EOF_DRAIN_S = 0.5

RequestHandler = Callable[[Message, "Endpoint"], Awaitable[dict[str, Any] | None]]
NotificationHandler = Callable[[Message, "Endpoint"], Awaitable[None]]


class Endpoint:
    """Reads from ``chunks``, writes with ``write``; call :meth:`run` inside a task group.

    Each incoming request starts through the request runner (:mod:`.runner`): its first
    step on the reader, and one that waits keeps the reader's task while reading goes on
    in a new one (asyncio), or a task-group child (trio)."""

    def __init__(
        self,
        write: Callable[[bytes], Awaitable[None]],
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        *,
        max_line: int = 16 * 1024 * 1024,
        id_start: int = 1,
    ) -> None:
        self._write = write
        self.on_request = on_request
        self.on_notification = on_notification
        self.outgoing: Outgoing[Waiter] = Outgoing(id_start)
        self.incoming: Incoming[Handle] = Incoming()
        self._framer = LineFramer(max_line)
        #: The input and the lines of its current chunk not handled yet: state of the
        #: reading loop rather than of one task, since a reader task that started a
        #: request that waits keeps it and hands reading on (:meth:`Runner.start`).
        self._input: AsyncIterator[bytes] | None = None
        self._lines: Iterator[bytes | Overflow] = iter(())
        self._input_ended: anyio.Event | None = None
        self._write_lock = anyio.Lock()
        self._uncancellable: set[RequestId] = set()
        self._tg: TaskGroup | None = None
        self._runner: Runner | None = None
        self.closed: str | None = None
        self.on_stray: Callable[[Message], None] | None = None
        #: Called with each input line that is not a valid JSON-RPC message, and why.
        self.on_invalid: Callable[[bytes, str], None] | None = None
        #: Answer such lines with a JSON-RPC error (a server should; a client that reads a
        #: server's stdout only logs and skips them).
        self.reply_to_invalid = True
        #: At EOF, let requests already received finish (for up to EOF_DRAIN_S) before
        #: cancelling them: a server whose client wrote its last request and closed its
        #: end (``echo '...' | mcpkit serve x.py``, a file on stdin) still answers it.
        #: Open ``subscriptions/listen`` streams end at once.  Off for clients.
        self.drain_on_eof = False
        self._streams: set[RequestId] = set()
        #: How :meth:`request` puts a failure into the owner's words (see :data:`Explain`);
        #: None: it raises the endpoint's own error.
        self.explain: Explain | None = None
        #: What a request's waiter is told its answer came with, and the clock its
        #: deadlines are kept on: a subclass with a cheaper way to wait sets its own.
        self._new_done: Callable[[], Done] = anyio.Event
        self._clock: Callable[[], float] = anyio.current_time

    # ------------------------------------------------------------------ sending
    async def send(self, message: Message) -> None:
        try:
            data = frame(encode_message(message))
        except ValueError as exc:  # an unencodable notification: drop it, keep the line up
            log.warning("dropping an outgoing %s: %s", message.get("method"), exc)
            return
        lock = self._write_lock
        try:  # uncontended (nearly always): take it without a trip through the event loop
            lock.acquire_nowait()
        except anyio.WouldBlock:
            await lock.acquire()
        try:
            await self._write(data)
        finally:
            lock.release()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.send(jsonrpc.notification(method, params))

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        max_timeout: float | None = None,
        request_id: RequestId | None = None,
        on_progress: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result (raises :class:`McpError` on an error
        response, :class:`RequestTimeout`, or :class:`EndpointClosed`; or what
        :attr:`explain` makes of them).

        Progress notifications for the request extend ``timeout`` (never past
        ``max_timeout``).  On timeout or cancellation a ``notifications/cancelled`` is sent.
        How the request is written and waited for is :meth:`_exchange`'s part.
        """
        started = time.monotonic()
        try:
            if self.closed is not None:
                raise EndpointClosed(self.closed, unsent=True)
            outgoing = self.outgoing
            rid = request_id if request_id is not None else outgoing.next_id()
            waiter = Waiter(self._new_done(), on_progress)
            outgoing.register(rid, method, waiter, progress_token_of(params))
            if timeout is not None:
                arm(waiter, self._clock(), timeout, max_timeout)
            try:
                if await self._exchange(jsonrpc.request(rid, method, params), waiter):
                    raise RequestTimeout(method, timeout or 0)
            except BaseException:
                await self._abandon(rid)
                raise
            if waiter.error is not None:
                raise waiter.error
            return waiter.value or {}
        except (McpError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            explain = self.explain
            if explain is None:
                raise
            raise await explain(
                exc, method, timeout, max_timeout, time.monotonic() - started
            ) from None

    def _exchange(self, message: Message, waiter: Waiter) -> Awaitable[bool | None]:
        """Write a registered request and wait until its ``waiter`` is done or its deadline
        passes: what the result is true for.  Returns the awaitable rather than being a
        coroutine, so that a subclass may hand back its waiter's future as it is."""
        return self._send_and_wait(message, waiter)

    async def _send_and_wait(self, message: Message, waiter: Waiter) -> bool:
        # The deadline covers the write too: a peer that stopped reading must not
        # block a request forever on a full pipe.
        limit = min(waiter.deadline, waiter.hard_deadline) - anyio.current_time()
        try:
            with anyio.fail_after(limit if limit != math.inf else None):
                await self.send(message)
        except TimeoutError:
            return True
        done = waiter.done
        while not done.is_set():
            remaining = min(waiter.deadline, waiter.hard_deadline) - anyio.current_time()
            if remaining <= 0:
                return True
            with anyio.move_on_after(remaining if remaining != math.inf else None):
                await done.wait()
        return False

    async def _abandon(self, rid: RequestId) -> None:
        """A request given up on (its timeout, a cancellation, a failed write): forgotten,
        and the peer told with ``notifications/cancelled`` while the endpoint is open (at
        most a second, shielded: the caller may be cancelled already)."""
        if self.outgoing.forget(rid) is not None and self.closed is None:
            with (
                anyio.CancelScope(shield=True),
                anyio.move_on_after(1),
                contextlib.suppress(Exception),
            ):
                await self.notify("notifications/cancelled", {"requestId": rid})

    # ------------------------------------------------------------------ receiving
    async def run(self, chunks: AsyncIterator[bytes]) -> None:
        """Process input until EOF; then fail whatever is pending."""
        self._input_ended = anyio.Event()
        self._input = chunks
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._runner = new_runner(tg)
            try:
                if not await self._read():
                    # This task served a request that waited; another task read on.
                    await self._input_ended.wait()
            finally:
                await self._join()
            tg.cancel_scope.cancel()

    async def _read(self) -> bool:
        """Handle input until EOF, then drain and close: True.  False when this task
        started a request that waited, served it to its end, and another task read on."""
        assert self._input is not None and self._input_ended is not None
        reason = "the peer closed the stream"
        try:
            while True:
                for line in self._lines:
                    if await self._line(line):
                        return False
                try:
                    chunk = await self._input.__anext__()
                except StopAsyncIteration:
                    break
                self._lines = iter(self._framer.feed(chunk))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            reason = f"read failed: {exc}"
        if self.drain_on_eof:
            await self._drain(reason)
        self.close(reason)
        self._input_ended.set()
        return True

    async def _join(self) -> None:
        """Cancel the requests still running and wait for them (what leaving a task group
        does for its children); replies already being written get a grace period (stdin
        can end while the answers are still going out), past it they are cancelled too."""
        for handle in self.incoming.all():
            handle.cancel()
        if self._runner is not None:
            await self._runner.join(JOIN_GRACE_S)

    async def _drain(self, reason: str) -> None:
        """EOF on a server: no answer to our requests can come any more, and listen
        streams end; requests in flight get up to EOF_DRAIN_S to finish."""
        for pending in self.outgoing.drain():
            pending.waiter.error = EndpointClosed(reason)
            pending.waiter.done.set()
        for rid in list(self._streams):
            scope = self.incoming.get(rid)
            if scope is not None:
                scope.cancel()
        with anyio.move_on_after(EOF_DRAIN_S):
            while self.incoming.all():
                await anyio.sleep(0.005)

    def close(self, reason: str) -> None:
        if self.closed is None:
            self.closed = reason
        for pending in self.outgoing.drain():
            pending.waiter.error = EndpointClosed(reason)
            pending.waiter.done.set()
        for scope in self.incoming.all():
            scope.cancel()

    async def _line(self, line: bytes | Overflow) -> bool:
        """Handle one input line; True when this task keeps a request that waited and
        no longer reads (:meth:`Runner.start`)."""
        if isinstance(line, Overflow):
            failure = McpError(INVALID_REQUEST, f"Message too large ({line.size} bytes)")
            await self._invalid(b"", failure.message, None, failure)
            return False
        try:
            message = decode(line)
        except DuplicateKeyError as exc:
            failure = McpError(INVALID_REQUEST, f"Invalid Request: {exc}")
            await self._invalid(line, failure.message, None, failure)
            return False
        except DecodeError as exc:
            failure = McpError(PARSE_ERROR, f"Parse error: {exc}")
            await self._invalid(line, failure.message, None, failure)
            return False
        try:
            kind = jsonrpc.classify(message)
        except McpError as err:
            await self._invalid(line, err.message, jsonrpc.answerable_id(message), err)
            return False
        if kind is Kind.REQUEST:
            runner = self._runner
            assert runner is not None
            handle = runner.new_handle()
            if not self._register(message, handle):
                await self._refuse_duplicate(message["id"])
                return False
            return await runner.start(self._serve(message, handle), self._read)
        elif kind is Kind.NOTIFICATION:
            await self._notification(message)
        else:
            pending = self.outgoing.resolve(message)
            if pending is None:
                if self.on_stray is not None:
                    self.on_stray(message)
                return False
            settle(pending.waiter, kind, message)
        return False

    def _register(self, message: Message, handle: Handle) -> bool:
        """Track an incoming request; False for a duplicate of one in flight (the caller
        refuses it)."""
        rid = message["id"]
        if not self.incoming.start(rid, handle):
            return False
        method = message["method"]
        if method == "initialize":
            self._uncancellable.add(rid)
        elif method == "subscriptions/listen":
            self._streams.add(rid)
        return True

    async def _refuse_duplicate(self, rid: RequestId) -> None:
        failure = McpError(INVALID_REQUEST, f"Request id {rid!r} is already in flight")
        await self.send(jsonrpc.error(rid, failure))

    async def _invalid(self, line: bytes, why: str, rid: RequestId | None, err: McpError) -> None:
        if self.on_invalid is not None:
            try:
                self.on_invalid(line, why)
            except Exception:
                log.exception("on_invalid hook failed")
        if self.reply_to_invalid:
            await self.send(jsonrpc.error(rid, err))

    async def _notification(self, message: Message) -> None:
        method = message["method"]
        params = jsonrpc.params_of(message)
        if method == "notifications/cancelled":
            target = cancelled_request_id(params)
            scope = self.incoming.get(target)
            # initialize must never be cancelled (2025-11-25 lifecycle rule): ignore it.
            if scope is not None and target not in self._uncancellable:
                scope.cancel()
        elif method == "notifications/progress":
            pending = self.outgoing.for_progress(params.get("progressToken"))
            if pending is not None:
                waiter = pending.waiter
                if waiter.timeout != math.inf:
                    # Progress proves the peer is alive: restart the timeout, never past
                    # the hard maximum.
                    waiter.deadline = min(
                        waiter.hard_deadline, anyio.current_time() + waiter.timeout
                    )
                if waiter.progress is not None:
                    outcome = waiter.progress(params)
                    if outcome is not None:
                        await outcome
        if self.on_notification is not None:
            try:
                await self.on_notification(message, self)
            except Exception:
                log.exception("notification handler failed for %s", method)

    async def _serve(self, message: Message, scope: Handle) -> None:
        rid = message["id"]
        reply: Message | None = None
        with scope:
            try:
                if self.on_request is None:
                    raise McpError(-32601, f"Method not found: {message['method']}")
                result = await self.on_request(message, self)
                reply = jsonrpc.result(rid, result) if result is not None else None
            except McpError as err:
                reply = jsonrpc.error(rid, err)
            except Exception as exc:
                log.exception("request handler failed for %s", message.get("method"))
                reply = jsonrpc.error(
                    rid, McpError(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")
                )
        self.incoming.finish(rid)
        if self._uncancellable:
            self._uncancellable.discard(rid)
        if self._streams:
            self._streams.discard(rid)
        if reply is not None and not scope.cancel_called:
            try:  # noqa: SIM105 - a suppress() context manager per reply costs more
                await self.send(reply)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # the peer is gone: nobody to answer

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        if self._tg is None:
            raise RuntimeError("endpoint is not running")
        self._tg.start_soon(fn, *args)
