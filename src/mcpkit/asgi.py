"""The ASGI request-body loop, below every layer that reads a request body.

Two places read a body from an ASGI ``receive`` callable with a size limit: the
Streamable HTTP app (``transports.http``) and the OAuth resource server's guard
(``auth.resource_server``), which reads a POST to check its scopes before the app does.
``auth`` sits below ``transports`` (see ``docs/architecture.md``), so the loop lives here,
beside ``protocol`` and ``auth``, importing nothing of mcpkit.  Each caller keeps its own
answers: the app refuses an oversized ``Content-Length`` before reading and maps the
exceptions to HTTP errors; the guard answers 413 itself and ends quietly when the client
has gone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BodyTooLarge", "ClientGone", "Receive", "read_chunks"]

#: ASGI's ``receive``: the next ``http.request`` (or ``http.disconnect``) message.
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class BodyTooLarge(Exception):
    """The body grew past the limit (raised as soon as it does, the rest unread)."""


class ClientGone(Exception):
    """``http.disconnect`` arrived before the body's last chunk."""


async def read_chunks(receive: Receive, limit: int) -> list[bytes]:
    """The body's non-empty chunks, in order, up to the one without ``more_body``.

    Raises :class:`ClientGone` or :class:`BodyTooLarge`, whichever comes first; it opens
    no cancel scope and awaits nothing but ``receive`` (``read_body_now`` steps it
    synchronously while the chunks are already there)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks
