"""A request sent and not yet answered: what the endpoint's reader, its close, the
deadline sweep and progress handling share (:class:`Waiter`), and the errors a pending
request can end with.  Both endpoints use it: the shared one (``runtime/endpoint.py``)
and stdio's on asyncio (``transports/stdio_io.py``), which differ only in how a waiter
learns that it is done (:class:`Done`).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..types.errors import INTERNAL_ERROR, McpError
from ..types.jsonrpc import Kind, Message


class EndpointClosed(McpError):
    """The endpoint's stream ended while a request was pending, on either role.  The
    client turns it into the public ``ConnectionClosedError`` (``transports/client_endpoint``)
    with what it knows of why; the two names are two layers' views of one event.
    ``unsent``: the stream had ended before the request was written."""

    def __init__(self, detail: str, *, unsent: bool = False) -> None:
        super().__init__(INTERNAL_ERROR, f"Connection closed: {detail}")
        self.unsent = unsent


class RequestTimeout(McpError):
    def __init__(self, method: str, seconds: float) -> None:
        super().__init__(INTERNAL_ERROR, f"Request {method} timed out after {seconds:g}s")


class Done(Protocol):
    """How a pending request learns that its answer came (or that it never will):
    ``anyio.Event`` for the shared endpoint, a future for stdio's (``transports/stdio_io``).
    The reader, :meth:`Endpoint.close` and the deadline sweep call ``set``; what
    ``wait`` returns is true when the request's deadline passed first."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    def wait(self) -> Awaitable[bool | None]: ...


#: Puts a request's failure into the owner's words: called with the error (an
#: :class:`McpError`: an error answer, :class:`RequestTimeout`, :class:`EndpointClosed`;
#: or the stream's own error when a write broke), the method, its timeout and
#: max_timeout and the seconds since the request started; returns what
#: :meth:`Endpoint.request` raises instead.
Explain = Callable[[Exception, str, float | None, float | None, float], Awaitable[BaseException]]


class Waiter:
    """One pending request: what the reader, :meth:`Endpoint.close` and progress handling
    read and write.  Its ``done`` is made by the endpoint (:attr:`Endpoint._new_done`)."""

    __slots__ = ("deadline", "done", "error", "hard_deadline", "progress", "timeout", "value")

    def __init__(
        self, done: Done, progress: Callable[[dict[str, Any]], Awaitable[None] | None] | None
    ) -> None:
        self.done = done
        self.progress = progress
        self.value: dict[str, Any] | None = None
        self.error: McpError | None = None
        self.deadline = self.hard_deadline = self.timeout = math.inf


def arm(waiter: Waiter, now: float, timeout: float, max_timeout: float | None) -> None:
    """Start a request's clock: progress moves ``deadline`` on by ``timeout`` each time,
    never past ``hard_deadline`` (``max_timeout``, or ten timeouts when none is given)."""
    waiter.timeout = timeout
    waiter.deadline = now + timeout
    waiter.hard_deadline = now + (max_timeout if max_timeout is not None else timeout * 10)


def settle(waiter: Waiter, kind: Kind, message: Message) -> None:
    """Hand a response to the request waiting for it (a non-object result is wrapped)."""
    if kind is Kind.RESULT:
        result = message["result"]
        waiter.value = result if isinstance(result, dict) else {"value": result}
    else:
        failure = message["error"]
        waiter.error = McpError(
            failure.get("code", INTERNAL_ERROR),
            str(failure.get("message", "")),
            failure.get("data"),
        )
    waiter.done.set()
