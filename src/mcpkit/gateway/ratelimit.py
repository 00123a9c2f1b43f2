"""Rate limits per method, per tool/resource/prompt name and per principal.

The algorithm (a moving window) and its storage (memory, or Redis shared by every gateway
process) come from the ``limits`` library; this module only decides which rules apply to
a request and builds their keys.  The key uses the name from the *body* after it was
checked against the ``Mcp-Name`` header, so a spoofed header is rejected (-32020) before
it can be counted under the wrong name.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ..types.extras import require
from .config import RateLimitRule


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    rule: str | None = None
    retry_after_s: int = 0
    limit: str | None = None


ALLOWED = Verdict(True)


class RateLimiter:
    def __init__(self, rules: tuple[RateLimitRule, ...], state_url: str = "memory:") -> None:
        self.rules = rules
        self._items: list[tuple[RateLimitRule, Any]] = []
        self._limiter: Any = None
        self._state_url = state_url
        if rules:
            limits = require("limits", "gateway", "gateway rate limits")
            RateLimitItemPerSecond = limits.RateLimitItemPerSecond

            for rule in rules:
                self._items.append((rule, RateLimitItemPerSecond(rule.amount, rule.window_s)))

    def _strategy(self) -> Any:
        if self._limiter is None:
            from limits.aio import storage, strategies

            url = self._state_url
            if url.startswith(("redis://", "rediss://")):
                store: Any = storage.RedisStorage(
                    "async+" + url, implementation="redispy", key_prefix="mcpkit-gw"
                )
            else:
                store = storage.MemoryStorage()
            self._limiter = strategies.MovingWindowRateLimiter(store)
        return self._limiter

    def applicable(self, method: str, name: str | None) -> list[tuple[RateLimitRule, Any]]:
        out = []
        for rule, item in self._items:
            if not any(fnmatchcase(method, p) for p in rule.methods):
                continue
            if rule.names != ("*",) and (
                name is None or not any(fnmatchcase(name, p) for p in rule.names)
            ):
                continue
            out.append((rule, item))
        return out

    async def check(self, principal: str, method: str, name: str | None) -> Verdict:
        """Count the request against every matching rule; the first exhausted rule wins.

        Every matching rule is tested before any is charged, so a request refused by one
        rule does not use up another's budget."""
        rules = self.applicable(method, name)
        if not rules:
            return ALLOWED
        limiter = self._strategy()
        keys = []
        for rule, item in rules:
            identity = (
                rule.name,
                method,
                name or "",
                principal if rule.per == "principal" else "*",
            )
            keys.append((rule, item, identity))
            if not await limiter.test(item, *identity):
                return await self._refusal(limiter, rule, item, identity)
        for rule, item, identity in keys:
            if not await limiter.hit(item, *identity):
                return await self._refusal(limiter, rule, item, identity)
        return ALLOWED

    async def _refusal(
        self, limiter: Any, rule: RateLimitRule, item: Any, identity: tuple[str, ...]
    ) -> Verdict:
        stats = await limiter.get_window_stats(item, *identity)
        retry = max(1, math.ceil(stats.reset_time - time.time()))
        return Verdict(False, rule.name, retry, rule.limit)
