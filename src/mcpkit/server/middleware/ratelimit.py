"""Rate limiting through the ``limits`` library (moving window), as the gateway does.

A rule has the gateway's shape: a rate (``"10/minute"``, ``"100 per 5 minutes"``), the
methods and names (tool, prompt or resource) it applies to as glob patterns, and whether
each principal gets its own budget (``per="principal"``) or all callers share one
(``per="global"``).  A refused request is -31029 with ``retryAfter`` (HTTP 429 with
``Retry-After``).  The counting lives in ``limits``' storage: memory by default, or a
Redis URL (``storage_url="redis://..."``) so every replica shares the budgets.
Needs ``pip install 'mcpkit[gateway]'`` (or ``limits`` alone).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import anyio

from ...types.errors import McpError
from ...types.methods import METHODS
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["RATE_LIMITED", "RateLimit", "RateRule"]

#: The gateway's code for a refused request (an implementation-defined server error).
RATE_LIMITED = -31029


@dataclass(frozen=True)
class RateRule:
    """``limit`` per window for requests matching ``methods`` and ``names``."""

    limit: str
    methods: tuple[str, ...] = ("*",)
    names: tuple[str, ...] = ("*",)
    per: str = "principal"
    name: str = ""


class RateLimit(Middleware):
    """Count every request against the rules that match it; refuse when one is spent."""

    def __init__(self, *rules: RateRule | str, storage_url: str = "memory://") -> None:
        try:
            from limits import parse, storage, strategies
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                "RateLimit needs the limits library: pip install 'mcpkit[gateway]'"
            ) from exc
        self.rules: list[tuple[RateRule, Any]] = []
        for index, rule in enumerate(rules):
            if isinstance(rule, str):
                rule = RateRule(rule)
            if rule.per not in ("principal", "global"):
                raise ValueError("per must be 'principal' or 'global'")
            named = rule if rule.name else RateRule(**{**rule.__dict__, "name": f"rule{index}"})
            self.rules.append((named, parse(rule.limit)))
        # The synchronous strategy: its memory storage never blocks and works on asyncio
        # and trio alike (limits' async memory storage needs asyncio); a networked
        # storage's calls go to a worker thread, off the event loop.
        self._memory = storage_url.startswith("memory")
        #: In memory the count is a plain call; a networked storage waits on a thread.
        self.waits = not self._memory
        options = {} if self._memory else {"key_prefix": "mcpkit-srv"}
        store = storage.storage_from_string(storage_url, **options)
        self._limiter = strategies.MovingWindowRateLimiter(store)

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        method = ctx.method
        spec = METHODS.get(method)
        raw = ctx.params.get(spec.name_param) if spec is not None and spec.name_param else None
        name = raw if isinstance(raw, str) else ""
        who = "" if ctx.principal is None else str(ctx.principal)
        charged = []
        for rule, item in self.rules:
            if not any(fnmatchcase(method, p) for p in rule.methods):
                continue
            if rule.names != ("*",) and not any(fnmatchcase(name, p) for p in rule.names):
                continue
            key = (rule.name, method, name, who if rule.per == "principal" else "*")
            if not await self._call(self._limiter.test, item, key):
                await self._refuse(rule, item, key)
            charged.append((rule, item, key))
        # Every matching rule is tested before any is charged: a request refused by one
        # rule does not use up another's budget.
        for rule, item, key in charged:
            if not await self._call(self._limiter.hit, item, key):
                await self._refuse(rule, item, key)
        return await call_next(ctx)

    async def _call(self, fn: Any, item: Any, key: tuple[str, ...]) -> Any:
        if self._memory:
            return fn(item, *key)
        return await anyio.to_thread.run_sync(lambda: fn(item, *key))

    async def _refuse(self, rule: RateRule, item: Any, key: tuple[str, ...]) -> None:
        stats = await self._call(self._limiter.get_window_stats, item, key)
        retry = max(1, math.ceil(stats.reset_time - time.time()))
        raise McpError(
            RATE_LIMITED,
            f"Rate limit exceeded: rule {rule.name!r} ({rule.limit}); retry in {retry} s",
            {"rule": rule.name, "limit": rule.limit, "retryAfter": retry},
            http_status=429,
            http_headers=[(b"retry-after", str(retry).encode())],
        )
