"""Middleware: the one seam every request passes through, whatever its transport or era.

:meth:`Server.dispatch <mcpkit.server.Server.dispatch>` is the single function that
answers requests from stdio, HTTP (modern and legacy), in-process calls, each MRTR round
and the body of a task-backed tool call.  It runs the chain built here and then the
handler.  A middleware subclasses :class:`Middleware` and overrides any hook; a hook that
is not overridden adds no layer at all, so a server without middleware (or whose
middleware ignores a method) pays nothing for that method.

Order (the onion): for ``Server(middleware=[a, b])`` a ``tools/call`` runs
``a.on_request -> a.on_call_tool -> b.on_request -> b.on_call_tool -> handler``, and the
result travels back out the same way.  A hook may read or replace ``ctx.params``, answer
without calling ``call_next`` (a result dict, or raise ``McpError``), or change the
result it gets back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["CallNext", "Middleware", "build_chains"]

CallNext = Callable[["Context"], Awaitable[dict[str, Any]]]
"""What a middleware hook awaits to pass the request on: the next middleware, and after the
last one the handler; it returns the result dict, which the hook may change."""

#: Method -> the operation hook that wraps it (after ``on_request``).
HOOKS: dict[str, str] = {
    "tools/call": "on_call_tool",
    "resources/read": "on_read_resource",
    "prompts/get": "on_get_prompt",
    "tools/list": "on_list_tools",
    "resources/list": "on_list_resources",
    "resources/templates/list": "on_list_resource_templates",
    "prompts/list": "on_list_prompts",
    "completion/complete": "on_complete",
}


class Middleware:
    """Base class: every hook passes the request on unchanged.  Override what you need.

    ``ctx`` is the request's :class:`~mcpkit.server.Context` (``ctx.method``,
    ``ctx.params``, ``ctx.era``, ``ctx.principal``, ``ctx.request_id``); ``call_next(ctx)``
    runs the rest of the chain and returns the result dict (or raises ``McpError``).

    The hooks, each ``async def hook(self, ctx, call_next) -> dict``:

    - ``on_request``: every request, before its operation hook.
    - ``on_call_tool``: around ``tools/call`` (``ctx.params['name']``, ``['arguments']``):
      change the params before ``call_next``, the result after, or answer without
      calling it.
    - ``on_read_resource``: around ``resources/read`` (``ctx.params['uri']``).
    - ``on_get_prompt``: around ``prompts/get`` (``ctx.params['name']``,
      ``['arguments']``).
    - ``on_list_tools``, ``on_list_resources``, ``on_list_resource_templates``,
      ``on_list_prompts``: may filter ``result['tools']``, ``['resources']``,
      ``['resourceTemplates']``, ``['prompts']`` (copy the list: the server caches it).
    - ``on_complete``: around ``completion/complete``.
    - ``on_notification``: a notification from the client
      (``notifications/initialized``, ``notifications/cancelled``, ...); the result is
      ignored.

    In the base class they are one function under every name: a hook a subclass leaves
    alone is still that function, which is how :func:`wrap` knows to add no layer for it.
    """

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        """Pass the request on unchanged (every hook of the base class; see the class)."""
        return await call_next(ctx)

    on_call_tool = on_read_resource = on_get_prompt = on_request
    on_list_tools = on_list_resources = on_list_resource_templates = on_list_prompts = on_request
    on_complete = on_notification = on_request


def _overrides(middleware: Middleware, hook: str) -> bool:
    return getattr(type(middleware), hook) is not getattr(Middleware, hook)


def _layer(
    hook: Callable[[Context, CallNext], Awaitable[dict[str, Any]]], nxt: CallNext
) -> CallNext:
    """``hook(ctx, nxt)`` as a one-argument callable.  A plain closure: it returns the
    hook's coroutine (no coroutine of its own) and costs less than ``functools.partial``
    with a keyword argument, per layer and request."""
    return lambda ctx: hook(ctx, nxt)


def wrap(
    handler: CallNext,
    method: str,
    middleware: Sequence[Middleware],
    *,
    notification: bool | None = None,
) -> CallNext:
    """``handler`` inside every layer ``middleware`` adds for ``method`` (onion order).
    Only overridden hooks become layers.  ``notification``: whether ``method`` is one
    (None: judged by its ``notifications/`` name; an extension's may be named otherwise)."""
    if notification is None:
        notification = method.startswith("notifications/")
    hook = "on_notification" if notification else HOOKS.get(method)
    chain = handler
    for m in reversed(middleware):
        if hook is not None and _overrides(m, hook):
            chain = _layer(getattr(m, hook), chain)
        if hook != "on_notification" and _overrides(m, "on_request"):
            chain = _layer(m.on_request, chain)
    return chain


def build_chains(
    handlers: Mapping[str, CallNext], middleware: Sequence[Middleware]
) -> dict[str, CallNext]:
    """One composed chain per method, built when the middleware list changes (never per
    request).  With no middleware the chains *are* the handlers."""
    return {method: wrap(handler, method, middleware) for method, handler in handlers.items()}
