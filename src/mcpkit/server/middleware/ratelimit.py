"""Rate limiting through the ``limits`` library (moving window): the one limiter, used
by any server as middleware and by the gateway for its ``[[rate_limit]]`` rules.

A rule has the gateway's shape: a rate (``"10/minute"``, ``"100 per 5 minutes"``), the
methods and names (tool, prompt or resource) it applies to as glob patterns, and whether
each principal gets its own budget (``per="principal"``) or all callers share one
(``per="global"``).  A refused request is -31029 with ``retryAfter`` (HTTP 429 with
``Retry-After``).  When a networked storage cannot be reached, a rule fails closed: the
request is refused with :class:`~mcpkit.state.StateUnavailable` (-31050, HTTP 503),
unless the rule says ``on_state_error = "allow"`` (it is then skipped until the storage
answers again).  The counting lives in ``limits``' storage: memory by default, or a
Redis URL (``storage_url="redis://..."``) so every replica shares the budgets.
Needs ``pip install 'mcpkit[gateway]'`` (or ``limits`` alone).

The key uses the name from the *body*, which the HTTP transport checked against the
``Mcp-Name`` header before, so a spoofed header is refused (-32020) before it can be
counted under the wrong name.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import anyio
import sniffio

from ...state.base import StateUnavailable
from ...types.errors import McpError
from ...types.methods import METHODS
from . import CallNext, Middleware

if TYPE_CHECKING:
    from limits import RateLimitItem

    from ..context import Context

__all__ = ["RATE_LIMITED", "RateLimit", "RateRule", "Verdict"]

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


@dataclass(frozen=True)
class Verdict:
    """What :meth:`RateLimit.check` decided: allowed, or the exhausted rule and when to
    retry."""

    allowed: bool
    rule: str | None = None
    retry_after_s: int = 0
    limit: str | None = None


_ALLOWED = Verdict(True)


class RateLimit(Middleware):
    """Count every request against the rules that match it; refuse when one is spent.

    ``key_prefix`` names the counters in a networked storage (two limiters sharing one
    Redis keep apart)."""

    def __init__(
        self,
        *rules: RateRule | str,
        storage_url: str = "memory://",
        key_prefix: str = "mcpkit-srv",
    ) -> None:
        try:
            from limits import parse, storage, strategies
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                "RateLimit needs the limits library: pip install 'mcpkit[gateway]'"
            ) from exc
        self.rules: list[tuple[RateRule, RateLimitItem]] = []
        for index, rule in enumerate(rules):
            if isinstance(rule, str):
                rule = RateRule(rule)
            if rule.per not in ("principal", "global"):
                raise ValueError("per must be 'principal' or 'global'")
            # (replace() keeps the rule's own class and fields, on_state_error included)
            named = rule if rule.name else dataclasses.replace(rule, name=f"rule{index}")
            self.rules.append((named, parse(rule.limit)))
        # Memory: the synchronous strategy, a plain call that never blocks, on asyncio and
        # trio alike (limits' async memory storage needs asyncio).  A networked storage:
        # limits' async Redis client on asyncio (what the gateway runs on: no thread hop
        # per check); under trio, or another storage, the synchronous client on a thread.
        self._memory = storage_url.startswith("memory")
        options = {} if self._memory else {"key_prefix": key_prefix}
        self._limiter = strategies.MovingWindowRateLimiter(
            storage.storage_from_string(storage_url, **options)
        )
        self._async_limiter: Any = None
        #: What the storage raises when it cannot be reached, and the store's watch.
        self._unreachable: tuple[type[BaseException], ...] = ()
        self._watch: Any = None
        if not self._memory:
            self._unreachable, self._watch = _storage_failures(storage_url)
        if storage_url.startswith(("redis://", "rediss://")):  # redis-py's asyncio client
            from limits.aio import strategies as aio_strategies

            self._async_limiter = aio_strategies.MovingWindowRateLimiter(
                storage.storage_from_string(
                    "async+" + storage_url, implementation="redispy", **options
                )
            )

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        method = ctx.method
        spec = METHODS.get(method)
        raw = ctx.params.get(spec.name_param) if spec is not None and spec.name_param else None
        who = "" if ctx.principal is None else str(ctx.principal)
        verdict = await self.check(who, method, raw if isinstance(raw, str) else None)
        if not verdict.allowed:
            retry = verdict.retry_after_s
            raise McpError(
                RATE_LIMITED,
                f"Rate limit exceeded: rule {verdict.rule!r} ({verdict.limit}); retry in {retry} s",
                {"rule": verdict.rule, "limit": verdict.limit, "retryAfter": retry},
                http_status=429,
                http_headers=[(b"retry-after", str(retry).encode())],
            )
        return await call_next(ctx)

    async def check(
        self, principal: str, method: str, name: str | None, *, charge: bool = True
    ) -> Verdict:
        """Count one request of ``principal`` against every matching rule; the first
        exhausted rule wins.  Every matching rule is tested before any is charged: a
        request refused by one rule does not use up another's budget.  ``charge=False``
        only tests (an early refusal on what a request's headers say)."""
        charged = []
        for rule, item in self.rules:
            if not any(fnmatchcase(method, p) for p in rule.methods):
                continue
            if rule.names != ("*",) and (
                name is None or not any(fnmatchcase(name, p) for p in rule.names)
            ):
                continue
            key = (rule.name, method, name or "", principal if rule.per == "principal" else "*")
            try:
                if not await self._call("test", item, key):
                    return await self._refusal(rule, item, key)
            except StateUnavailable:
                if _fails_open(rule):
                    continue
                raise
            charged.append((rule, item, key))
        for rule, item, key in charged if charge else ():
            try:
                if not await self._call("hit", item, key):
                    return await self._refusal(rule, item, key)
            except StateUnavailable:
                if not _fails_open(rule):
                    raise
        return _ALLOWED

    async def _call(self, what: str, item: RateLimitItem, key: tuple[str, ...]) -> Any:
        if self._memory:
            return getattr(self._limiter, what)(item, *key)
        try:
            if self._async_limiter is not None and sniffio.current_async_library() == "asyncio":
                found = await getattr(self._async_limiter, what)(item, *key)
            else:
                fn = getattr(self._limiter, what)
                found = await anyio.to_thread.run_sync(lambda: fn(item, *key))
        except self._unreachable as exc:
            raise self._watch.failed(exc) from None
        self._watch.answered()
        return found

    async def _refusal(self, rule: RateRule, item: RateLimitItem, key: tuple[str, ...]) -> Verdict:
        stats = await self._call("get_window_stats", item, key)
        retry = max(1, math.ceil(stats.reset_time - time.time()))
        return Verdict(False, rule.name, retry, rule.limit)


def _fails_open(rule: RateRule) -> bool:
    """Whether ``rule`` lets requests through while its storage cannot be reached
    (``on_state_error = "allow"``); by default it refuses them."""
    return getattr(rule, "on_state_error", "deny") == "allow"


def _storage_failures(storage_url: str) -> tuple[tuple[type[BaseException], ...], Any]:
    """What ``limits`` raises when its networked storage is unreachable, and the watch of
    that store (shared with the state backend on the same Redis)."""
    from limits.errors import StorageError

    from ...state.watch import watch

    unreachable: tuple[type[BaseException], ...] = (StorageError, OSError)
    scheme = storage_url.split(":", 1)[0].removeprefix("async+")
    kind = "redis" if scheme in ("redis", "rediss") else scheme
    if kind == "redis":
        from ...state.redis import unreachable_errors

        unreachable += unreachable_errors()
    return unreachable, watch(kind, storage_url)
