"""The 2025-11-25 core tasks (SEP-1686) served by the tasks engine of the 2026-07-28
extension: the ``task`` parameter, ``execution.taskSupport``, the ``tasks`` capability,
``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel``, bound to the caller.

In process (``support.inproc``): every result and error is checked against the official
2025-11-25 schema by the helpers; server->client requests sent on a ``tasks/result``
exchange are checked by ``AnsweringExchange``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from test_server_mrtr import LEGACY_ANSWERS, AnsweringExchange

from mcpkit import Context, Server
from mcpkit.types.versions import TASKS_EXTENSION
from support.inproc import call, call_error, legacy, modern, text_of
from support.servers import redis_server

pytestmark = pytest.mark.anyio

RELATED = "io.modelcontextprotocol/related-task"
ELICIT: dict[str, Any] = {"elicitation": {"form": {}}}


def make_server() -> Server:
    server = Server("tasks-2025")

    @server.tool(task="optional")
    async def slow(seconds: float, label: str = "x") -> str:
        """Sleeps, then reports."""
        await anyio.sleep(seconds)
        return f"{label} after {seconds}s"

    @server.tool(task="required")
    async def confirm(ctx: Context) -> str:
        """Asks inside the task."""
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {}})
        return f"answer: {answer['content']['name']}"

    @server.tool(task="required")
    async def broken() -> str:
        """Ends in a protocol error."""
        from mcpkit import McpError

        raise McpError(-32603, "exploded")

    @server.tool
    def plain() -> str:
        """Never a task."""
        return "plain"

    return server


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    served = make_server()
    async with served.running():
        yield served


async def _start(
    server: Server, name: str, arguments: dict[str, Any] | None = None, principal: object = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}, "task": {"ttl": 60_000}}
    created = await call(server, "tools/call", params, legacy(ELICIT), principal=principal)
    task: dict[str, Any] = created["task"]
    return task


async def test_capability_and_tool_execution_are_declared(server: Server) -> None:
    caps = server.capabilities("legacy")
    assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert "tasks" not in server.capabilities("modern")
    tools = await call(server, "tools/list", {}, legacy())
    support = {t["name"]: t.get("execution", {}).get("taskSupport") for t in tools["tools"]}
    assert support == {
        "slow": "optional",
        "confirm": "required",
        "broken": "required",
        "plain": None,
    }
    modern_tools = await call(server, "tools/list", {}, modern())
    assert all("execution" not in t for t in modern_tools["tools"])


async def test_task_call_is_created_polled_and_its_result_fetched(server: Server) -> None:
    task = await _start(server, "slow", {"seconds": 0.2, "label": "job"})
    assert task["status"] == "working" and task["ttl"] == 60_000
    assert "pollInterval" in task and "ttlMs" not in task
    got = await call(server, "tasks/get", {"taskId": task["taskId"]}, legacy())
    assert got["taskId"] == task["taskId"] and "resultType" not in got
    result = await call(server, "tasks/result", {"taskId": task["taskId"]}, legacy())
    assert text_of(result) == "job after 0.2s"
    assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
    done = await call(server, "tasks/get", {"taskId": task["taskId"]}, legacy())
    assert done["status"] == "completed"


async def test_without_task_param_an_optional_tool_answers_at_once(server: Server) -> None:
    result = await call(
        server, "tools/call", {"name": "slow", "arguments": {"seconds": 0}}, legacy()
    )
    assert text_of(result) == "x after 0.0s"


async def test_task_support_mismatches_are_method_not_found(server: Server) -> None:
    await call_error(server, "tools/call", {"name": "confirm"}, legacy(ELICIT), code=-32601)
    await call_error(server, "tools/call", {"name": "plain", "task": {}}, legacy(), code=-32601)


async def test_before_2025_11_25_a_task_tool_runs_to_its_result(server: Server) -> None:
    old = legacy(version="2025-06-18")
    result = await call(
        server, "tools/call", {"name": "slow", "arguments": {"seconds": 0}, "task": {}}, old
    )
    assert text_of(result) == "x after 0.0s"


async def test_input_inside_a_task_is_asked_on_the_result_stream(server: Server) -> None:
    task = await _start(server, "confirm")
    exchange = AnsweringExchange(LEGACY_ANSWERS)
    result = await call(
        server, "tasks/result", {"taskId": task["taskId"]}, legacy(ELICIT), exchange
    )
    assert text_of(result) == "answer: Legacy"
    [asked] = exchange.requests
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["_meta"][RELATED] == {"taskId": task["taskId"]}


async def test_failed_task_result_is_the_error(server: Server) -> None:
    task = await _start(server, "broken")
    error = await call_error(
        server, "tasks/result", {"taskId": task["taskId"]}, legacy(), code=-32603
    )
    assert "exploded" in error.message


async def test_cancel_ends_the_task_and_refuses_a_finished_one(server: Server) -> None:
    task = await _start(server, "slow", {"seconds": 60})
    cancelled = await call(server, "tasks/cancel", {"taskId": task["taskId"]}, legacy())
    assert cancelled["status"] == "cancelled"
    await call_error(server, "tasks/cancel", {"taskId": task["taskId"]}, legacy(), code=-32602)
    await call_error(server, "tasks/result", {"taskId": task["taskId"]}, legacy(), code=-32603)


async def test_list_names_only_the_callers_tasks_and_pages(server: Server) -> None:
    server.page_size = 2
    mine = [await _start(server, "slow", {"seconds": 0}, principal="alice") for _ in range(3)]
    theirs = await _start(server, "slow", {"seconds": 0}, principal="bob")
    first = await call(server, "tasks/list", {}, legacy(), principal="alice")
    second = await call(
        server, "tasks/list", {"cursor": first["nextCursor"]}, legacy(), principal="alice"
    )
    listed = [t["taskId"] for t in first["tasks"] + second["tasks"]]
    assert listed == [t["taskId"] for t in mine] and "nextCursor" not in second
    await call_error(
        server, "tasks/list", {"cursor": "nope"}, legacy(), code=-32602, principal="alice"
    )
    # another caller's task answers as unknown, for every method
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        await call_error(
            server, method, {"taskId": theirs["taskId"]}, legacy(), code=-32602, principal="alice"
        )


async def test_one_engine_serves_both_eras(server: Server) -> None:
    """A task created by a 2025-11-25 call is the same record the 2026-07-28 extension
    reads: one store, one binding."""
    task = await _start(server, "slow", {"seconds": 0})
    await call(server, "tasks/result", {"taskId": task["taskId"]}, legacy())
    caps: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
    record = server.tasks
    got = await record.dispatch("tasks/get", {"taskId": task["taskId"]}, modern(caps), None)
    assert got["status"] == "completed" and got["result"]["content"][0]["text"] == "x after 0.0s"


class SlowUser(AnsweringExchange):
    """A client whose user takes a moment to answer."""

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        await anyio.sleep(0.3)
        return await super().request(method, params, timeout)


async def test_two_result_waiters_send_the_tasks_input_once(server: Server) -> None:
    """Two ``tasks/result`` calls waiting on one task: its input request goes out on one
    of them only, and both get the result."""
    task = await _start(server, "confirm")
    exchanges = [SlowUser(LEGACY_ANSWERS), SlowUser(LEGACY_ANSWERS)]
    results: list[dict[str, Any]] = []

    async def wait(exchange: SlowUser) -> None:
        params = {"taskId": task["taskId"]}
        results.append(await call(server, "tasks/result", params, legacy(ELICIT), exchange))

    async with anyio.create_task_group() as tg:
        for exchange in exchanges:
            tg.start_soon(wait, exchange)
    assert [text_of(r) for r in results] == ["answer: Legacy"] * 2
    assert sum(len(e.requests) for e in exchanges) == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # (redis-py's asyncio client)
@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_any_replica_lists_the_tasks_created_on_another(store: str, tmp_path: Any) -> None:
    """Two servers on one state store (two replicas): the tasks a caller created on
    either, forty at once, are all listed by both, and nobody else's is."""
    with contextlib.ExitStack() as stack:
        if store == "redis":
            url = f"redis://127.0.0.1:{stack.enter_context(redis_server())}/0"
        else:
            url = f"sqlite:///{tmp_path / 'state.db'}"
        first, second = make_server(), make_server()
        first.state, second.state = url, url
        async with first.running(), second.running():
            created: list[str] = []

            async def create(server: Server) -> None:
                task = await _start(server, "slow", {"seconds": 0}, principal="alice")
                created.append(task["taskId"])

            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(create, (first, second)[i % 2])
            await _start(second, "slow", {"seconds": 0}, principal="bob")
            for server in (first, second):
                server.page_size = 100
                listed = await call(server, "tasks/list", {}, legacy(), principal="alice")
                ids = [t["taskId"] for t in listed["tasks"]]
                assert sorted(ids) == sorted(created) and len(ids) == 40
