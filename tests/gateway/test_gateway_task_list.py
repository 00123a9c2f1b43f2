"""The 2025-11-25 ``tasks/list`` and ``notifications/tasks/status`` through the gateway, over
real HTTP: alice and bob, each a 2025-11-25 client of the gateway (mcpkit's ``Client``,
its GET stream open), start tasks on two upstreams of ``tests/servers/owned.py`` (one
speaking 2025-11-25 only, one 2026-07-28 only).  Each lists only their own tasks, named
by the ids the gateway gave them; a status change an upstream announces reaches the
caller who owns the task, under that caller's id, and never the other caller."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import gwkit
import pytest

from mcpkit import McpError
from mcpkit.client import Client, Task
from support.waits import Notices

pytestmark = pytest.mark.anyio

OWNED = "tests/servers/owned.py"
ALICE, BOB = gwkit.ALICE, gwkit.BOB


@pytest.fixture(scope="module")
def gateway(log_dir: Any) -> Iterator[gwkit.Proc]:
    legacy = gwkit.spawn_upstream("legacy", log_dir, OWNED, "--no-modern", OWNED_NAME="legacy")
    modern = gwkit.spawn_upstream("modern", log_dir, OWNED, "--no-legacy", OWNED_NAME="modern")
    for upstream in (legacy, modern):
        gwkit.wait_port(upstream)
    upstreams = gwkit.toml_upstream("legacy", url=legacy.url, prefix="l_")
    upstreams += gwkit.toml_upstream("modern", url=modern.url, prefix="m_")
    config = gwkit.two_callers_config(upstreams)
    gw = gwkit.start_gateway("gw", log_dir, config)
    try:
        yield gw
    finally:
        for proc in (gw, legacy, modern):
            proc.stop()


@pytest.fixture
async def callers(gateway: gwkit.Proc) -> AsyncIterator[tuple[Client, Client]]:
    def caller(token: str) -> Client:
        return Client(gateway.url, era="legacy", headers={"authorization": f"Bearer {token}"})

    async with caller(ALICE) as alice, caller(BOB) as bob:
        yield alice, bob


async def _start(client: Client, tool: str, key: str) -> Task:
    task = await client.start_tool_task(tool, {"key": key}, ttl_ms=60_000)
    assert isinstance(task, Task), task
    return task


async def _listed(client: Client) -> list[str]:
    ids: list[str] = []
    params: dict[str, Any] = {}
    while True:
        page = await client.request("tasks/list", params)
        ids += [task["taskId"] for task in page["tasks"]]
        if "nextCursor" not in page:
            return ids
        params = {"cursor": page["nextCursor"]}


async def test_each_caller_lists_only_their_own_tasks(callers: tuple[Client, Client]) -> None:
    alice, bob = callers
    with anyio.fail_after(30):
        assert alice.server_info.capabilities["tasks"].get("list") == {}
        mine = [await _start(alice, "l_hold", "a1"), await _start(alice, "m_hold", "a2")]
        theirs = [await _start(bob, "l_hold", "b1")]
        listed = await _listed(alice)
        assert sorted(listed) == sorted(t.id for t in mine)
        assert await _listed(bob) == [theirs[0].id]
        page = await alice.request("tasks/list")
        assert {t["status"] for t in page["tasks"]} == {"working"}
        assert all("ttl" in t and "createdAt" in t for t in page["tasks"])
        with pytest.raises(McpError) as foreign:
            await alice.request("tasks/get", {"taskId": theirs[0].id})
        assert foreign.value.code == -32602


async def test_a_modern_caller_has_no_tasks_list(gateway: gwkit.Proc) -> None:
    """2026-07-28 has no ``tasks/list`` (the tasks extension lists nothing): -32601."""
    headers = {"authorization": f"Bearer {ALICE}"}
    with anyio.fail_after(30):
        async with Client(gateway.url, era="modern", tasks=True, headers=headers) as alice:
            with pytest.raises(McpError) as refused:
                await alice.request("tasks/list")
    assert refused.value.code == -32601


async def test_a_status_change_reaches_its_owner_only(callers: tuple[Client, Client]) -> None:
    alice, bob = callers
    hers, his = Notices(), Notices()
    alice.on_notification("notifications/tasks/status", hers)
    bob.on_notification("notifications/tasks/status", his)
    with anyio.fail_after(30):
        task = await _start(alice, "l_hold", "status-1")
        await bob.call_tool("l_release", {"key": "status-1"})
        done = await hers.wait_for(taskId=task.id, status="completed")
        assert done["taskId"] == task.id and "ttl" in done
        result = await task.result(timeout=30)
        assert result["content"][0]["text"] == "legacy finished status-1"
    assert his.seen == []
