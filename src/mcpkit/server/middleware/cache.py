"""Response caching in the state backend, for read-only tools and for resources.

A ``tools/call`` of a tool annotated ``readOnlyHint: true`` and a ``resources/read`` are
answered from the server's state backend (memory, SQLite or Redis: shared by replicas
that share it) for ``ttl_s`` seconds.  The key is a hash of the tool name and its
arguments (canonical JSON) or of the URI, and of the principal when the request is
authenticated, so one caller never sees another's answer.  Error results, input requests
(MRTR rounds) and task-backed calls are never cached, nor is anything else.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ...types.codec import encode
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["ResponseCache"]


class ResponseCache(Middleware):
    """Cache read-only tool results and resource contents for ``ttl_s`` seconds."""

    def __init__(self, ttl_s: float = 60.0, *, prefix: str = "cache:") -> None:
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        self.ttl_s = ttl_s
        self.prefix = prefix

    def _key(self, ctx: Context, kind: str, *parts: object) -> str:
        who = "" if ctx.principal is None else str(ctx.principal)
        digest = hashlib.sha256(encode([kind, ctx.era, who, *parts])).hexdigest()
        return f"{self.prefix}{kind}:{digest}"

    @staticmethod
    def _cacheable_request(ctx: Context) -> bool:
        params = ctx.params
        return "inputResponses" not in params and params.get("requestState") is None

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        name = ctx.params.get("name")
        tool = ctx.server.tools.get(name) if isinstance(name, str) else None
        annotations = tool.wire.get("annotations") if tool is not None else None
        if (
            not isinstance(annotations, dict)
            or annotations.get("readOnlyHint") is not True
            or ctx.task_id is not None
            or not self._cacheable_request(ctx)
        ):
            return await call_next(ctx)
        key = self._key(ctx, "tool", name, ctx.params.get("arguments") or {})
        return await self._cached(ctx, key, call_next, lambda r: not r.get("isError"))

    async def on_read_resource(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if not self._cacheable_request(ctx):
            return await call_next(ctx)
        key = self._key(ctx, "resource", ctx.params.get("uri"))
        return await self._cached(ctx, key, call_next, lambda r: "contents" in r)

    async def _cached(
        self, ctx: Context, key: str, call_next: CallNext, keep: Any
    ) -> dict[str, Any]:
        state = ctx.server.state
        hit = await state.get_json(key)
        if isinstance(hit, dict):
            return hit
        result = await call_next(ctx)
        if result.get("resultType", "complete") == "complete" and keep(result):
            stored = {k: v for k, v in result.items() if k != "resultType"}
            await state.set_json(key, stored, self.ttl_s)
        return result
