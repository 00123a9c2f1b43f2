"""Any replica serves any request: tasks, handles, MRTR, listen and legacy sessions
across real processes sharing one state backend (memory / SQLite / Redis behind nginx)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from harness import run_server_suite
from services import Cluster
from wire import TASKS, call, legacy

from support.mcp import sse_json

pytestmark = pytest.mark.anyio

TASK_CAPS: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS: {}}}


async def _wait_status(
    client: httpx.AsyncClient, cluster: Cluster, task_id: str, wanted: set[str], start: int = 1
) -> dict[str, Any]:
    """Poll tasks/get, rotating over the replicas, until the status is one of ``wanted``."""
    status = None
    with anyio.fail_after(20):
        index = start
        while True:
            reply = await call(
                client, cluster.replica(index), "tasks/get", {"taskId": task_id}, TASK_CAPS
            )
            result = reply.result
            status = result["status"]
            if status in wanted:
                return result
            index += 1
            await anyio.sleep(0.1)


def test_conformance_requirement_set_and_tasks(cluster: Cluster) -> None:
    """The 2026-07-28 requirement set (and every tasks-* scenario) through the front."""
    suite = run_server_suite(cluster.front, requirements="2026-07-28")
    summary = suite.summary()
    assert suite.failed == 0 and suite.passed >= 37, summary + "\n" + cluster.logs()
    tasks = {n: s for n, s in suite.scenarios.items() if n.startswith("tasks-")}
    assert len(tasks) >= 9, summary
    broken = [n for n, s in tasks.items() if s.failed]
    assert not broken, summary + "\n" + cluster.logs()


async def test_task_created_on_one_replica_completes_on_others(cluster: Cluster) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        created = await call(
            client,
            cluster.replica(0),
            "tools/call",
            {"name": "slow_compute", "arguments": {"seconds": 1, "label": "across"}},
            TASK_CAPS,
        )
        task = created.result
        assert task["resultType"] == "task", task
        done = await _wait_status(client, cluster, task["taskId"], {"completed", "failed"})
        assert done["status"] == "completed", done
        assert "across" in done["result"]["content"][0]["text"]


async def test_task_cancelled_and_answered_through_other_replicas(cluster: Cluster) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        slow = (
            await call(
                client,
                cluster.replica(0),
                "tools/call",
                {"name": "slow_compute", "arguments": {"seconds": 60}},
                TASK_CAPS,
            )
        ).result
        ack = await call(
            client, cluster.replica(-1), "tasks/cancel", {"taskId": slow["taskId"]}, TASK_CAPS
        )
        assert ack.result == {"resultType": "complete"} or ack.result["resultType"] == "complete"
        cancelled = await _wait_status(
            client, cluster, slow["taskId"], {"cancelled", "completed", "failed"}
        )
        assert cancelled["status"] == "cancelled", cancelled

        confirm = (
            await call(
                client,
                cluster.replica(0),
                "tools/call",
                {"name": "confirm_delete", "arguments": {"filename": "x.txt"}},
                TASK_CAPS,
            )
        ).result
        parked = await _wait_status(client, cluster, confirm["taskId"], {"input_required"})
        answers = {
            key: {"action": "accept", "content": {"confirm": True}}
            for key in parked["inputRequests"]
        }
        await call(
            client,
            cluster.replica(-1),
            "tasks/update",
            {"taskId": confirm["taskId"], "inputResponses": answers},
            TASK_CAPS,
        )
        done = await _wait_status(client, cluster, confirm["taskId"], {"completed", "failed"})
        assert done["result"]["content"][0]["text"] == "Deleted x.txt"


async def test_task_of_a_killed_replica_resolves(cluster: Cluster) -> None:
    if cluster.backend == "memory":
        pytest.skip("a memory backend dies with its only process")
    doomed = cluster.spawn()
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            task = (
                await call(
                    client,
                    doomed.url,
                    "tools/call",
                    {"name": "slow_compute", "arguments": {"seconds": 60, "label": "doomed"}},
                    TASK_CAPS,
                )
            ).result
            doomed.kill()
            final = await _wait_status(
                client, cluster, task["taskId"], {"completed", "failed", "cancelled"}
            )
            assert final["status"] == "failed", final
            assert "stopped" in final["error"]["message"]
    finally:
        doomed.kill()


async def test_mrtr_rounds_on_different_replicas(cluster: Cluster) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    name = "test_input_required_result_multi_round"
    async with httpx.AsyncClient(timeout=30) as client:
        first = (
            await call(
                client, cluster.replica(0), "tools/call", {"name": name, "arguments": {}}, caps
            )
        ).result
        assert first["resultType"] == "input_required" and "step1" in first["inputRequests"]
        second = (
            await call(
                client,
                cluster.replica(1),
                "tools/call",
                {
                    "name": name,
                    "arguments": {},
                    "requestState": first["requestState"],
                    "inputResponses": {"step1": {"action": "accept", "content": {"name": "Alice"}}},
                },
                caps,
            )
        ).result
        assert second["resultType"] == "input_required" and "step2" in second["inputRequests"]
        third = (
            await call(
                client,
                cluster.replica(2),
                "tools/call",
                {
                    "name": name,
                    "arguments": {},
                    "requestState": second["requestState"],
                    "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}},
                },
                caps,
            )
        ).result
        assert third["content"][0]["text"] == "Alice likes blue."


async def test_listen_on_one_replica_hears_changes_made_on_another(cluster: Cluster) -> None:
    params = {"notifications": {"toolsListChanged": True}}
    seen: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=30) as client:
        body = {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "subscriptions/listen",
        }
        with anyio.fail_after(15):
            async with client.stream(
                "POST", cluster.replica(0), headers=headers, content=json.dumps(body)
            ) as stream:
                lines = stream.aiter_lines()
                async for line in lines:
                    if line.startswith("data:"):
                        seen.append(json.loads(line[5:]))
                        break
                assert seen[0]["method"] == "notifications/subscriptions/acknowledged"
                await anyio.sleep(0.3)  # let the subscription reach the backend everywhere
                await call(
                    client,
                    cluster.replica(-1),
                    "tools/call",
                    {"name": "test_trigger_tool_change", "arguments": {}},
                )
                async for line in lines:
                    if line.startswith("data:"):
                        message = json.loads(line[5:])
                        seen.append(message)
                        if message.get("method") == "notifications/tools/list_changed":
                            break
    assert seen[-1]["method"] == "notifications/tools/list_changed"
    assert seen[-1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"


async def test_handles_resolve_on_every_replica(cluster: Cluster) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        made = (
            await call(
                client, cluster.replica(0), "tools/call", {"name": "basket_create", "arguments": {}}
            )
        ).result
        basket = made["structuredContent"]["basket_id"]
        for index in range(3):
            await call(
                client,
                cluster.replica(index),
                "tools/call",
                {"name": "basket_add", "arguments": {"basket_id": basket, "item": "pear"}},
            )
        view = (
            await call(
                client,
                cluster.replica(1),
                "tools/call",
                {"name": "basket_view", "arguments": {"basket_id": basket}},
            )
        ).result
        assert view["structuredContent"] == {"items": {"pear": 3}}
        unknown = (
            await call(
                client,
                cluster.replica(2),
                "tools/call",
                {"name": "basket_view", "arguments": {"basket_id": "bsk_unknown"}},
            )
        ).result
        assert (
            unknown["isError"] is True
            and "Unknown or expired handle" in unknown["content"][0]["text"]
        )
        short = (
            await call(
                client,
                cluster.replica(0),
                "tools/call",
                {"name": "basket_create", "arguments": {"ttl_s": 0.5}},
            )
        ).result
        await anyio.sleep(1.0)
        expired = (
            await call(
                client,
                cluster.replica(1),
                "tools/call",
                {
                    "name": "basket_view",
                    "arguments": {"basket_id": short["structuredContent"]["basket_id"]},
                },
            )
        ).result
        assert expired["isError"] is True and "expired" in expired["content"][0]["text"]


async def test_legacy_session_through_round_robin(cluster: Cluster) -> None:
    """A 2025-11-25 client, every request possibly on another replica, including the answer
    to a server->client sampling request."""
    urls = (
        [cluster.front] * 3
        if cluster.backend == "redis"
        else [cluster.replica(i) for i in range(3)]
    )
    async with httpx.AsyncClient(timeout=30) as client:
        init = await legacy(
            client,
            urls[0],
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"sampling": {}},
                    "clientInfo": {"name": "legacy-test", "version": "1"},
                },
            },
            None,
        )
        assert init.status_code == 200, init.text
        session = init.headers["mcp-session-id"]
        assert (
            await legacy(
                client, urls[1], {"jsonrpc": "2.0", "method": "notifications/initialized"}, session
            )
        ).status_code == 202
        listed = await legacy(
            client, urls[2], {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session
        )
        names = [
            t["name"] for t in (sse_json(listed.text) or [listed.json()])[-1]["result"]["tools"]
        ]
        assert "test_sampling" in names

        body = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}},
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
            "mcp-session-id": session,
        }
        final = None
        with anyio.fail_after(20):
            async with client.stream(
                "POST", urls[0], headers=headers, content=json.dumps(body)
            ) as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data:") or not line[5:].strip():
                        continue
                    message = json.loads(line[5:])
                    if message.get("method") == "sampling/createMessage":
                        answer = {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "result": {
                                "role": "assistant",
                                "content": {"type": "text", "text": "pong"},
                                "model": "test",
                                "stopReason": "endTurn",
                            },
                        }
                        sent = await legacy(client, urls[1], answer, session)
                        assert sent.status_code == 202
                    elif message.get("id") == 3:
                        final = message
                        break
        assert (
            final is not None and final["result"]["content"][0]["text"] == "LLM response: pong"
        ), final
        gone = await client.delete(
            urls[2], headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        )
        assert gone.status_code == 200
        after = await legacy(
            client, urls[0], {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, session
        )
        assert after.status_code == 404


async def test_legacy_task_status_reaches_the_sessions_stream_on_another_replica(
    cluster: Cluster,
) -> None:
    """A 2025-11-25 task created through one replica: its ``notifications/tasks/status``
    reach the session's GET stream held by another replica (the state backend relays it)."""
    async with httpx.AsyncClient(timeout=30) as client:
        init = await legacy(
            client,
            cluster.replica(0),
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "status-test", "version": "1"},
                },
            },
            None,
        )
        session = init.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await legacy(client, cluster.replica(0), initialized, session)).status_code == 202
        headers = {
            "accept": "text/event-stream",
            "mcp-protocol-version": "2025-11-25",
            "mcp-session-id": session,
        }
        seen: list[dict[str, Any]] = []
        with anyio.fail_after(30):
            async with client.stream("GET", cluster.replica(1), headers=headers) as stream:
                assert stream.status_code == 200
                await anyio.sleep(0.3)  # let the stream's replica hear the backend
                call_params = {
                    "name": "slow_compute",
                    "arguments": {"seconds": 0.3},
                    "task": {"ttl": 60000},
                }
                created = await legacy(
                    client,
                    cluster.replica(0),
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call_params},
                    session,
                )
                reply = (sse_json(created.text) or [created.json()])[-1]
                task_id = reply["result"]["task"]["taskId"]
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        message = json.loads(line[5:])
                        seen.append(message)
                        params = message.get("params") or {}
                        if params.get("taskId") == task_id and params["status"] == "completed":
                            break
    assert seen[-1]["method"] == "notifications/tasks/status", cluster.logs()
