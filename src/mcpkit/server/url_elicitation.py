"""URL-mode elicitation: send the user to a web page, learn later that they finished.

A server asks the user to open a URL (a sign-in, a consent page, a payment) when what
happens there must not pass through the client: ``await ctx.elicit_url(message, url)``.
The client's answer only says whether the user agreed to open it; the *outcome* arrives
out of band, when the page tells the server.  The server then calls
:meth:`UrlElicitation.complete`, which records the completion in the server's state
backend (so every replica sees it) and, on the 2025-11-25 era, sends
``notifications/elicitation/complete`` to the client that was asked.

On the 2026-07-28 era there is no ``elicitationId`` and no completion notification: the
client answers the input request and retries; the retried round's handle says whether the
elicitation has completed by then (:attr:`UrlElicitation.completed`).  The id is still
minted (kept in the sealed round state, so every round of one call shares it) because
the page needs a name for the elicitation it completes.

A tool that cannot go on without the user visiting a page may instead raise
:class:`UrlElicitationRequired`: on 2025-11-25 the call fails with ``-32042`` and
``data.elicitations`` (the client opens the URLs, waits for the completions and
retries); on 2026-07-28 it becomes an ``input_required`` round with the same URLs.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from ..types.errors import McpError
from .mrtr import NeedInput

if TYPE_CHECKING:
    from ..runtime.exchange import Exchange
    from ..state.base import StateBackend

__all__ = [
    "URL_ELICITATION_REQUIRED",
    "UrlElicitation",
    "UrlElicitationRequired",
    "complete_url_elicitation",
    "new_elicitation_id",
]

#: The 2025-11-25 error code (retired in 2026-07-28, where an input round replaces it).
URL_ELICITATION_REQUIRED: Final = -32042

#: How long a completion stays recorded in the state backend.
COMPLETION_TTL_S: Final = 3600.0
_POLL_S: Final = 0.2

UrlAction = Literal["accept", "decline", "cancel"]
UrlSpec = str | Callable[[str], str]
"""The page to open: a URL, or a function of the elicitation id that builds it."""


def new_elicitation_id() -> str:
    """A fresh, unguessable elicitation id (the page completing it names it)."""
    return "el_" + secrets.token_urlsafe(18)


def _state_key(elicitation_id: str) -> str:
    return f"url-elicitation:{elicitation_id}"


async def complete_url_elicitation(state: StateBackend, elicitation_id: str) -> None:
    """Record that the user finished at the page of ``elicitation_id`` (any replica,
    any request: e.g. the page's own callback route).  A handle waiting for it
    (:meth:`UrlElicitation.wait`) sees it, and a retried 2026-07-28 round reports it."""
    await state.set_json(_state_key(elicitation_id), {"complete": True}, COMPLETION_TTL_S)


async def is_url_elicitation_complete(state: StateBackend, elicitation_id: str) -> bool:
    record = await state.get_json(_state_key(elicitation_id))
    return isinstance(record, dict) and record.get("complete") is True


def url_params(message: str, url: str, elicitation_id: str | None) -> dict[str, Any]:
    """``ElicitRequestURLParams`` (``elicitationId`` only where the era has it)."""
    params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
    if elicitation_id is not None:
        params["elicitationId"] = elicitation_id
    return params


class UrlElicitation:
    """One URL elicitation: what the user answered, and how the server completes it.

    ``action`` is the client's answer (``accept`` = the user agreed to open the page; it
    says nothing about what happened there), None for a handle not asked through
    ``elicit_url`` (:meth:`~mcpkit.server.Context.url_elicitation`, raised with
    :meth:`required`).  ``completed`` is whether the completion was
    already recorded when this handle was made (on a retried 2026-07-28 round, the way
    that era reports it)."""

    __slots__ = (
        "_exchange",
        "_notified",
        "_state",
        "action",
        "completed",
        "elicitation_id",
        "message",
        "url",
    )

    def __init__(
        self,
        elicitation_id: str,
        message: str,
        url: str,
        action: UrlAction | None,
        state: StateBackend,
        exchange: Exchange | None,
        *,
        completed: bool = False,
    ) -> None:
        self.elicitation_id = elicitation_id
        self.message = message
        self.url = url
        self.action: UrlAction | None = action
        self.completed = completed
        self._state = state
        self._exchange = exchange  # legacy: where the completion notification goes
        self._notified = False

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    async def complete(self) -> None:
        """The user finished at the page: record it and, on 2025-11-25, send
        ``notifications/elicitation/complete`` (once) to the client that was asked."""
        await complete_url_elicitation(self._state, self.elicitation_id)
        self.completed = True
        await self._notify()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until the elicitation is completed (by :meth:`complete` or
        :func:`complete_url_elicitation`, from any request or replica); True when it
        was, False after ``timeout`` seconds.  On 2025-11-25 the client is told."""
        with anyio.move_on_after(timeout):
            while not await is_url_elicitation_complete(self._state, self.elicitation_id):
                await anyio.sleep(_POLL_S)
            self.completed = True
            await self._notify()
            return True
        return False

    async def _notify(self) -> None:
        if self._exchange is None or self._notified:
            return
        self._notified = True
        await self._exchange.notify(
            "notifications/elicitation/complete", {"elicitationId": self.elicitation_id}
        )

    def required(self) -> UrlElicitationRequired:
        """The error to raise when the call cannot go on until the user has been to the
        page (``raise handle.required()``)."""
        return UrlElicitationRequired(
            [url_params(self.message, self.url, self.elicitation_id)], self.message
        )


class UrlElicitationRequired(McpError, NeedInput):
    """Raised by a tool: the user must visit these pages before the call can succeed.

    ``elicitations`` are ``ElicitRequestURLParams`` (``mode``, ``message``, ``url``,
    ``elicitationId``); build them with :meth:`of`.  2025-11-25: the call fails with
    ``-32042`` and ``data: {"elicitations": [...]}``.  2026-07-28 (where that error is
    retired): the call answers an ``input_required`` round asking for the same URLs; the
    retried call runs the tool again, which decides whether it can go on now."""

    def __init__(self, elicitations: Sequence[dict[str, Any]], message: str | None = None) -> None:
        items = [dict(e) for e in elicitations]
        if not items:
            raise ValueError("UrlElicitationRequired needs at least one elicitation")
        for item in items:
            if item.get("mode") != "url" or not isinstance(item.get("url"), str):
                raise ValueError(f"not a URL elicitation: {item!r}")
            if not isinstance(item.get("elicitationId"), str):
                raise ValueError(f"a URL elicitation needs an elicitationId: {item!r}")
        text = message or "This request needs you to open a URL first"
        McpError.__init__(self, URL_ELICITATION_REQUIRED, text, {"elicitations": items})
        self.requests = {
            f"url-{item['elicitationId']}": {
                "method": "elicitation/create",
                "params": {k: v for k, v in item.items() if k != "elicitationId"},
            }
            for item in items
        }

    @classmethod
    def of(
        cls, message: str, url: UrlSpec, elicitation_id: str | None = None
    ) -> UrlElicitationRequired:
        """One page: ``raise UrlElicitationRequired.of("Connect GitHub", url)``; ``url``
        may be a function of the (minted) elicitation id."""
        eid = elicitation_id or new_elicitation_id()
        target = url(eid) if callable(url) else url
        return cls([url_params(message, target, eid)], message)

    @property
    def elicitations(self) -> list[dict[str, Any]]:
        data: dict[str, list[dict[str, Any]]] = self.data
        return data["elicitations"]
