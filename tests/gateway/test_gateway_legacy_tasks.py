"""The 2025-11-25 tasks of a 2025-11-25 caller through the gateway, over real HTTP: two
upstreams of ``tests/servers/owned.py`` (its ``hold`` runs as a task when asked, until
``release``), one speaking 2025-11-25 only and one 2026-07-28 only.  A task is created,
polled and its result read through the gateway; its id is the caller's alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import gwkit
import pytest

OWNED = "tests/servers/owned.py"
ALICE, BOB = gwkit.ALICE, gwkit.BOB
RELATED = "io.modelcontextprotocol/related-task"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[gwkit.Proc]:
    logs = tmp_path_factory.mktemp("legacy-tasks")
    legacy = gwkit.spawn_upstream("legacy", logs, OWNED, "--no-modern", OWNED_NAME="legacy")
    modern = gwkit.spawn_upstream("modern", logs, OWNED, "--no-legacy", OWNED_NAME="modern")
    for upstream in (legacy, modern):
        gwkit.wait_port(upstream)
    upstreams = gwkit.toml_upstream("legacy", url=legacy.url, prefix="l_")
    upstreams += gwkit.toml_upstream("modern", url=modern.url, prefix="m_")
    gw = gwkit.start_gateway("gw", logs, gwkit.two_callers_config(upstreams))
    try:
        yield gw
    finally:
        for proc in (gw, legacy, modern):
            proc.stop()


@pytest.fixture
def alice(gateway: gwkit.Proc) -> Iterator[gwkit.LegacySession]:
    session = gwkit.LegacySession(gateway.url, token=ALICE)
    try:
        yield session
    finally:
        session.close()


def test_the_gateway_offers_tasks_to_a_legacy_caller(alice: gwkit.LegacySession) -> None:
    init = alice.initialize()
    assert init.result["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    tools = {t["name"]: t for t in alice.request("tools/list").result["tools"]}
    # The 2025-11-25 upstream's execution.taskSupport, passed through (a 2026-07-28
    # upstream's tools carry none: its server decides per call).
    assert tools["l_hold"]["execution"]["taskSupport"] == "optional", tools["l_hold"]


@pytest.mark.parametrize("upstream", ["legacy", "modern"])
def test_a_task_is_created_polled_and_read_through_the_gateway(
    gateway: gwkit.Proc, alice: gwkit.LegacySession, upstream: str
) -> None:
    alice.initialize()
    prefix, key = upstream[0] + "_", f"key-{upstream}"
    created = alice.request(
        "tools/call", {"name": prefix + "hold", "arguments": {"key": key}, "task": {"ttl": 60000}}
    )
    task = created.result["task"]
    front = task["taskId"]
    assert task["status"] == "working" and "ttl" in task, task
    assert upstream not in front  # (sealed: nothing of the upstream's id in the clear)

    polled = alice.request("tasks/get", {"taskId": front}).result
    assert polled["taskId"] == front and polled["status"] == "working", polled

    bob = gwkit.LegacySession(gateway.url, token=BOB)
    try:
        bob.initialize()
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            foreign = bob.request(method, {"taskId": front})
            assert foreign.error["code"] == -32602, foreign.body
            assert foreign.error["message"] == f"Unknown task: {front}"
    finally:
        bob.close()

    released = alice.request("tools/call", {"name": prefix + "release", "arguments": {"key": key}})
    assert released.result["content"][0]["text"] == "released"
    result = alice.request("tasks/result", {"taskId": front}).result
    assert result["content"][0]["text"] == f"{upstream} finished {key}", result
    if RELATED in (result.get("_meta") or {}):
        assert result["_meta"][RELATED] == {"taskId": front}
    done = alice.request("tasks/get", {"taskId": front}).result
    assert done["status"] == "completed" and done["taskId"] == front


def test_a_made_up_task_id_is_unknown(alice: gwkit.LegacySession) -> None:
    alice.initialize()
    reply = alice.request("tasks/get", {"taskId": "legacy~1"})
    assert reply.error["code"] == -32602 and reply.error["message"] == "Unknown task: legacy~1"


@pytest.mark.parametrize("upstream", ["legacy", "modern"])
def test_a_task_is_cancelled_through_the_gateway(alice: gwkit.LegacySession, upstream: str) -> None:
    alice.initialize()
    params = {"name": upstream[0] + "_hold", "arguments": {"key": f"never-{upstream}"}}
    created = alice.request("tools/call", {**params, "task": {}})
    front = created.result["task"]["taskId"]
    cancelled = alice.request("tasks/cancel", {"taskId": front}).result
    assert cancelled["taskId"] == front and cancelled["status"] == "cancelled", cancelled
    assert alice.request("tasks/get", {"taskId": front}).result["status"] == "cancelled"
