"""Every exception the client raises, in one place.

The transport-level ones are defined in :mod:`mcpkit.transports.client_base` (transports
sit below the client and cannot import it) and re-exported here; this module adds the
failures only the client layer can detect.  Catch :class:`ClientError` for "anything went
wrong talking to this server"; catch :class:`ServerError` for "the server said no".

Exception groups never reach the caller: :func:`unwrap` turns what an anyio task group
raises into the one error that explains it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..transports.client_base import (
    ClientError,
    ConnectError,
    ConnectionClosedError,
    HttpStatusError,
    ProtocolViolationError,
    RequestTimeoutError,
    ServerError,
    ServerStartupError,
    SessionExpiredError,
    TransportError,
)

if TYPE_CHECKING:
    from .models import CallToolResult

__all__ = [
    "ClientError",
    "ConnectError",
    "ConnectionClosedError",
    "HttpStatusError",
    "InputRequestError",
    "InvalidResultError",
    "ProtocolViolationError",
    "RequestTimeoutError",
    "ServerError",
    "ServerStartupError",
    "SessionExpiredError",
    "TooManyInputRounds",
    "ToolError",
    "TransportError",
    "UrlElicitationRequiredError",
    "VersionNegotiationError",
    "error_boundary",
    "unwrap",
]


class VersionNegotiationError(ClientError):
    """Client and server share no protocol version."""


class ToolError(ClientError):
    """A tool answered ``isError: true`` and the caller asked for an exception
    (``call_tool(..., raise_on_error=True)``).  ``content`` is what the tool said, meant for
    a model or a person; ``result`` is the whole result.  (Not :class:`mcpkit.ToolError`,
    which a *server's* tool raises to produce such a result.)"""

    def __init__(self, name: str, result: CallToolResult) -> None:
        self.tool = name
        self.result = result
        content = result.get("content") if isinstance(result, dict) else None
        self.content: list[Any] = content if isinstance(content, list) else []
        texts = [
            str(b["text"])
            for b in self.content
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        super().__init__(f"tool {name!r} failed: " + (" ".join(texts)[:500] or "(no text)"))


class InvalidResultError(ProtocolViolationError):
    """A result does not have the shape its method promises (e.g. unknown ``resultType``)."""


class InputRequestError(ClientError):
    """The server asked for input the client cannot give (no callback, bad request, or the
    application's callback returned something that is not a valid answer)."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        #: True when no callback exists for what was asked (as opposed to a bad answer).
        self.missing = missing


class UrlElicitationRequiredError(ServerError):
    """The server needs the user to visit pages (``elicitations``: ``message``, ``url``,
    ``elicitationId``) and the client could not get that done: ``reason`` says why (no
    ``url_elicitation`` callback, the user declined, no completion in time)."""

    def __init__(self, cause: ServerError, elicitations: list[dict[str, Any]], reason: str) -> None:
        ServerError.__init__(
            self,
            cause.code,
            f"{cause.message}: {reason}",
            cause.data,
            method=cause.method,
            http_status=cause.http_status,
        )
        self.elicitations = elicitations
        self.reason = reason


class TooManyInputRounds(ClientError):
    """A multi round-trip request still wanted input after the configured number of rounds."""

    def __init__(self, method: str, rounds: int) -> None:
        super().__init__(
            f"{method} still required input after {rounds} rounds; giving up "
            f"(raise ClientOptions.max_input_rounds if the server legitimately needs more)"
        )
        self.method = method
        self.rounds = rounds


def unwrap(exc: BaseException) -> BaseException:
    """The error that explains an exception group: the first non-cancellation leaf,
    preferring a :class:`ClientError`.  Anything else comes back unchanged."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, ClientError):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, Exception):
            return leaf
    return leaves[0] if leaves else exc


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for item in group.exceptions:
        if isinstance(item, BaseExceptionGroup):
            out.extend(_leaves(item))
        else:
            out.append(item)
    return out


@contextlib.contextmanager
def error_boundary() -> Iterator[None]:
    """Never let an exception group reach the application."""
    try:
        yield
    except BaseExceptionGroup as group:
        raise unwrap(group) from None
