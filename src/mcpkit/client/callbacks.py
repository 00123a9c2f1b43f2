"""The application's side of the conversation: callbacks, and the capabilities they imply.

A client declares a capability exactly when it can honour it, so capabilities are derived
from which callbacks were given and never kept by hand.  The same callbacks answer both
eras' ways of asking: an ``inputRequests`` entry of an ``input_required`` result (2026-07-28)
and a server->client JSON-RPC request (legacy).  Answers are checked here, once, so that a
buggy callback is reported as such instead of as a protocol error from the server.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..transports.client_base import ProgressHandler
from .errors import InputRequestError
from .models import CreateMessageResult, ElicitResult, Notification, Root

T = TypeVar("T")

ElicitationHandler = Callable[[dict[str, Any]], Awaitable[ElicitResult] | ElicitResult]
"""Form-mode elicitation: receives the request params (``message``, ``requestedSchema``)."""

UrlElicitationHandler = Callable[[dict[str, Any]], Awaitable[ElicitResult] | ElicitResult]
"""URL-mode elicitation: receives the params (``message``, ``url``); ``accept`` = consent."""

SamplingHandler = Callable[[dict[str, Any]], Awaitable[CreateMessageResult] | CreateMessageResult]
"""Sampling: receives ``sampling/createMessage`` params, returns a ``CreateMessageResult``."""

RootsProvider = Sequence[Root] | Callable[[], Awaitable[Sequence[Root]] | Sequence[Root]]
"""Roots: a fixed list, or a callable returning one."""

LogHandler = Callable[[dict[str, Any]], Awaitable[None] | None]
"""``notifications/message`` params (``level``, ``logger``, ``data``)."""

NotificationHandler = Callable[[Notification], Awaitable[None] | None]
"""Any other server notification (legacy list changes, resource updates, ...)."""

ProgressCallback = ProgressHandler
"""``notifications/progress`` params (``progress``, ``total``, ``message``) of one request:
the transports' :data:`~mcpkit.transports.client_base.ProgressHandler`, under the client's
public name (one definition)."""

_ACTIONS = ("accept", "decline", "cancel")


async def call_maybe_async(fn: Callable[..., Awaitable[T] | T], *args: object) -> T:
    """Call a sync or async callback."""
    outcome = fn(*args)
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


@dataclass(slots=True)
class Callbacks:
    """What the application can do for the server."""

    elicitation: ElicitationHandler | None = None
    url_elicitation: UrlElicitationHandler | None = None
    sampling: SamplingHandler | None = None
    #: Declare ``sampling.tools`` (the sampling callback understands ``tools``).
    sampling_tools: bool = False
    roots: RootsProvider | None = None
    on_log: LogHandler | None = None
    on_notification: NotificationHandler | None = None

    def capabilities(self, *, roots_list_changed: bool) -> dict[str, Any]:
        """Client capabilities; roots announce ``listChanged`` where the era has
        ``notifications/roots/list_changed`` (legacy)."""
        caps: dict[str, Any] = {}
        if self.elicitation is not None or self.url_elicitation is not None:
            modes: dict[str, Any] = {}
            if self.elicitation is not None:
                modes["form"] = {}
            if self.url_elicitation is not None:
                modes["url"] = {}
            caps["elicitation"] = modes
        if self.sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True} if roots_list_changed else {}
        return caps

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to one input request; raises :class:`InputRequestError`."""
        if method == "elicitation/create":
            return await self._elicit(params)
        if method == "sampling/createMessage":
            if self.sampling is None:
                raise InputRequestError(
                    "the server asked for sampling, but no sampling callback is configured",
                    missing=True,
                )
            result = await call_maybe_async(self.sampling, params)
            return _check_sampling(result, params)
        if method == "roots/list":
            if self.roots is None:
                raise InputRequestError(
                    "the server asked for roots, but no roots were configured", missing=True
                )
            return {"roots": await self.list_roots()}
        if method == "ping":
            return {}
        raise InputRequestError(
            f"the server asked for {method!r}, which clients do not serve", missing=True
        )

    async def list_roots(self) -> list[dict[str, Any]]:
        provider = self.roots
        if provider is None:
            return []
        if callable(provider):
            roots = await call_maybe_async(provider)
        else:
            roots = provider
        out: list[dict[str, Any]] = []
        for root in roots:
            if not isinstance(root, dict) or not isinstance(root.get("uri"), str):
                raise InputRequestError(f"the roots callback returned an invalid root: {root!r}")
            out.append(dict(root))
        return out

    async def _elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        mode = params.get("mode") or "form"
        handler = (
            self.elicitation
            if mode == "form"
            else (self.url_elicitation if mode == "url" else None)
        )
        if handler is None:
            raise InputRequestError(
                f"the server asked for {mode}-mode elicitation, but no {mode} elicitation "
                f"callback is configured",
                missing=True,
            )
        result = await call_maybe_async(handler, params)
        return _check_elicit(result)


def _check_elicit(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict) or result.get("action") not in _ACTIONS:
        raise InputRequestError(
            f"the elicitation callback must return {{'action': 'accept'|'decline'|'cancel', "
            f"'content': {{...}}}}, not {result!r}"[:300]
        )
    answer: dict[str, Any] = {"action": result["action"]}
    content = result.get("content")
    if content is not None:
        if not isinstance(content, dict):
            raise InputRequestError(f"elicitation content must be an object, not {content!r}")
        if result["action"] == "accept":
            answer["content"] = content
    return answer


def _check_sampling(result: Any, params: dict[str, Any]) -> dict[str, Any]:
    if (
        not isinstance(result, dict)
        or not isinstance(result.get("role"), str)
        or "content" not in result
        or not isinstance(result.get("model"), str)
    ):
        raise InputRequestError(
            "the sampling callback must return a CreateMessageResult "
            f"({{'role', 'content', 'model'}}), not {result!r}"[:300]
        )
    _check_tool_uses(result["content"], params)
    return dict(result)


def _check_tool_uses(content: Any, params: dict[str, Any]) -> None:
    """A ``tool_use`` answer (sampling with tools) names a tool the request offered and
    carries an ``id`` and an ``input`` object."""
    blocks = content if isinstance(content, list) else [content]
    offered = {t.get("name") for t in params.get("tools") or [] if isinstance(t, dict)}
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        if not isinstance(block.get("id"), str) or not isinstance(block.get("input"), dict):
            raise InputRequestError(f"a tool_use block needs an id and an input object: {block!r}")
        if block.get("name") not in offered:
            raise InputRequestError(
                f"the sampling callback asked for tool {block.get('name')!r}, "
                f"which the request did not offer (offered: {sorted(map(str, offered))})"
            )
