"""URL elicitation on the client: the ``-32042`` answer and the completion notices.

A 2025-11-25 server may answer a request with ``-32042`` (URLElicitationRequired) and
``data.elicitations``: pages the user must visit first.  The client shows each one to the
application's ``url_elicitation`` callback (the same one that answers ``elicitation/create``
in URL mode, on either era); when the user accepts every page, the client waits for the
server's ``notifications/elicitation/complete`` for each of them and then sends the
request again, once.  Without a callback, or when the user declines, or when a
completion does not arrive in time, :class:`UrlElicitationRequiredError` is raised with
the pages, so the application can show them itself.

On 2026-07-28 the error and the notification are retired: a URL elicitation is an input
request like any other (see :mod:`mcpkit.client.mrtr`) and the retried round tells.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

import anyio

from ..transports.client_base import ServerError
from .callbacks import Callbacks
from .errors import UrlElicitationRequiredError

__all__ = ["URL_ELICITATION_REQUIRED", "UrlCompletions", "UrlElicitationRequiredError"]

URL_ELICITATION_REQUIRED: Final = -32042
_REMEMBERED: Final = 256  # completions kept for a wait that starts after they arrived


class UrlCompletions:
    """The ``notifications/elicitation/complete`` this client has received, and the
    requests waiting for one.  ``timeout`` bounds each wait (seconds; a person is signing
    in somewhere, so it is generous)."""

    __slots__ = ("_done", "_waiting", "timeout")

    def __init__(self, timeout: float = 600.0) -> None:
        self.timeout = timeout
        self._done: OrderedDict[str, None] = OrderedDict()
        self._waiting: dict[str, anyio.Event] = {}

    def complete(self, elicitation_id: str) -> None:
        self._done[elicitation_id] = None
        while len(self._done) > _REMEMBERED:
            self._done.popitem(last=False)
        event = self._waiting.pop(elicitation_id, None)
        if event is not None:
            event.set()

    async def wait(self, elicitation_id: str) -> bool:
        """True once ``elicitation_id`` is completed (also if it already was); False
        after :attr:`timeout`."""
        if elicitation_id in self._done:
            return True
        event = self._waiting.setdefault(elicitation_id, anyio.Event())
        with anyio.move_on_after(self.timeout):
            await event.wait()
            return True
        self._waiting.pop(elicitation_id, None)
        return False


def elicitations_of(error: ServerError) -> list[dict[str, Any]]:
    """The ``data.elicitations`` of a ``-32042`` error, checked."""
    data = error.data if isinstance(error.data, dict) else {}
    items = data.get("elicitations")
    if not isinstance(items, list) or not items:
        raise UrlElicitationRequiredError(error, [], "the error names no elicitations")
    for item in items:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("url"), str)
            and isinstance(item.get("elicitationId"), str)
        ):
            raise UrlElicitationRequiredError(error, [], f"invalid URL elicitation {item!r}")
    return items


async def fulfil(error: ServerError, callbacks: Callbacks, completions: UrlCompletions) -> None:
    """Show every page of a ``-32042`` error to the callback and wait for each
    completion; raises :class:`UrlElicitationRequiredError` when that cannot be done."""
    items = elicitations_of(error)
    if callbacks.url_elicitation is None:
        raise UrlElicitationRequiredError(error, items, "no url_elicitation callback is set")
    for item in items:
        answer = await callbacks.answer("elicitation/create", {**item, "mode": "url"})
        if answer["action"] != "accept":
            raise UrlElicitationRequiredError(
                error, items, f"the user chose {answer['action']} for {item['url']}"
            )
    for item in items:
        if not await completions.wait(item["elicitationId"]):
            raise UrlElicitationRequiredError(
                error,
                items,
                f"no notifications/elicitation/complete for {item['elicitationId']} "
                f"within {completions.timeout:g} s",
            )
