"""Two gateway processes sharing one redis-server enforce one rate limit between them.

A burst of concurrent calls, spread over both gateways, must be admitted ``N`` times in
total (within 5%), not ``N`` per gateway.  Needs ``redis-server`` (skipped without it,
except in CI).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import gwkit
import httpx
import pytest

from support.mcp import modern_headers

sys.path.insert(0, str(gwkit.ROOT / "tests" / "scaleout"))

PER_USER = 50
GLOBAL = 30
TOKENS = {"alice": "token-alice", "bob": "token-bob", "carol": "token-carol"}

CONFIG = """
[gateway]
state = "{redis}"

[auth]
mode = "bearer"
[auth.tokens]
{tokens}

[[rate_limit]]
name = "per-user"
limit = "{per_user}/minute"
methods = ["tools/call"]
names = ["whoami"]

[[rate_limit]]
name = "everyone"
limit = "{global_} per 1 minute"
methods = ["tools/call"]
names = ["pid"]
per = "global"
"""


@pytest.fixture(scope="module")
def gateways(log_dir: Path, stack: list[gwkit.Proc], redis_url: str) -> Iterator[list[gwkit.Proc]]:
    upstream = gwkit.start_upstream("shared", log_dir)
    stack.append(upstream)
    tokens = "\n".join(f'"{token}" = "{who}"' for who, token in TOKENS.items())
    config = CONFIG.format(
        redis=redis_url, tokens=tokens, per_user=PER_USER, global_=GLOBAL
    ) + gwkit.toml_upstream("shared", url=upstream.url)
    pair = [gwkit.start_gateway(f"gateway{i}", log_dir, config) for i in (1, 2)]
    stack.extend(pair)
    yield pair
    for gw in pair:
        gw.stop()


async def burst(
    gateways: list[gwkit.Proc], tool: str, who: list[str], attempts: int
) -> Counter[int]:
    """``attempts`` concurrent calls of ``tool``, round-robin over gateways and callers."""
    statuses: Counter[int] = Counter()
    limiter = anyio.Semaphore(24)

    async def one(index: int, http: httpx.AsyncClient) -> None:
        gateway = gateways[index % len(gateways)]
        token = TOKENS[who[index % len(who)]]
        body = {
            "jsonrpc": "2.0",
            "id": index,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": gwkit.meta()},
        }
        async with limiter:
            response = await http.post(
                gateway.url,
                headers=modern_headers(body, Authorization=f"Bearer {token}"),
                json=body,
            )
        statuses[response.status_code] += 1

    limits = httpx.Limits(max_connections=64)
    async with (
        httpx.AsyncClient(timeout=30, limits=limits) as http,
        anyio.create_task_group() as tg,
    ):
        for index in range(attempts):
            tg.start_soon(one, index, http)
    return statuses


@pytest.mark.anyio
async def test_two_gateways_enforce_one_limit_per_principal(gateways: list[gwkit.Proc]) -> None:
    statuses = await burst(gateways, "whoami", ["alice"], PER_USER * 3)
    admitted = statuses[200]
    print(f"\nper-principal limit {PER_USER}: admitted {admitted}, statuses {dict(statuses)}")
    assert set(statuses) <= {200, 429}, statuses
    assert abs(admitted - PER_USER) <= 0.05 * PER_USER, statuses
    # Someone else's budget is untouched, on either gateway; other methods too.
    for gateway in gateways:
        reply = gwkit.call(gateway.url, "tools/call", {"name": "whoami"}, token="token-bob")
        assert reply.text() == "shared"
        assert gwkit.call(gateway.url, "tools/list", token="token-alice").status == 200


@pytest.mark.anyio
async def test_two_gateways_enforce_one_global_limit(gateways: list[gwkit.Proc]) -> None:
    statuses = await burst(gateways, "pid", ["bob", "carol"], GLOBAL * 3)
    admitted = statuses[200]
    print(f"\nglobal limit {GLOBAL}: admitted {admitted}, statuses {dict(statuses)}")
    assert set(statuses) <= {200, 429}, statuses
    assert abs(admitted - GLOBAL) <= 0.05 * GLOBAL, statuses
