"""A state store that cannot be reached is ``StateUnavailable``: the documented code
(-31050) with HTTP 503, ``data`` naming the kind of store and never its address; the
operator gets one log line for the outage, not one per call; a rate limit on that store
refuses requests by default and lets them through when its rule says
``on_state_error = "allow"``.

Real Redis: started, used, then stopped, so the port refuses connections as a crashed
Redis's would.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from mcpkit.server.middleware.ratelimit import RateLimit, RateRule
from mcpkit.state import STATE_UNAVAILABLE, StateUnavailable, open_backend
from mcpkit.state.redis import RedisBackend
from support.servers import redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # (redis-py's asyncio client)


@pytest.fixture
async def gone_redis() -> AsyncIterator[tuple[str, int]]:
    """The URL of a Redis that answered once and is gone now (its port refuses)."""
    with redis_server() as port:
        url = f"redis://:s3cret@127.0.0.1:{port}/0"
        backend = open_backend(url)
        await backend.set("k", b"v")
        assert await backend.get("k") == b"v"
        await backend.aclose()
    yield url, port


async def test_an_unreachable_redis_is_state_unavailable(
    gone_redis: tuple[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    url, port = gone_redis
    backend = RedisBackend(url)
    with caplog.at_level(logging.WARNING, logger="mcpkit.state"):
        for _ in range(5):
            with pytest.raises(StateUnavailable) as caught:
                await backend.get("k")
        with pytest.raises(StateUnavailable):
            await backend.cas("k", None, b"w")
        assert await backend.ping() is False
    error = caught.value
    assert error.code == STATE_UNAVAILABLE == -31050
    assert error.http_status == 503
    assert error.data == {"stateStore": "redis"}
    wire = str(error.to_wire())
    assert str(port) not in wire and "s3cret" not in wire and "127.0.0.1" not in wire
    warnings = [r.getMessage() for r in caplog.records if r.name == "mcpkit.state"]
    assert len(warnings) == 1, warnings  # one line for the outage, not one per call
    assert str(port) in warnings[0] and "s3cret" not in warnings[0]
    assert not any(r.exc_info for r in caplog.records)  # an expected outage: no traceback
    await backend.aclose()


@dataclass(frozen=True)
class LenientRule(RateRule):
    """A rule that prefers availability (what ``on_state_error = "allow"`` configures)."""

    on_state_error: str = "allow"


async def test_rate_limits_fail_closed_unless_the_rule_allows(gone_redis: tuple[str, int]) -> None:
    url, _ = gone_redis
    strict = RateLimit(RateRule("5/minute", methods=("tools/call",)), storage_url=url)
    with pytest.raises(StateUnavailable) as caught:
        await strict.check("alice", "tools/call", "echo")
    assert caught.value.http_status == 503 and caught.value.data == {"stateStore": "redis"}
    lenient = RateLimit(LenientRule("5/minute", methods=("tools/call",)), storage_url=url)
    assert (await lenient.check("alice", "tools/call", "echo")).allowed
    # A request no rule matches never needs the store.
    assert (await strict.check("alice", "tools/list", None)).allowed
