"""The client side of the tasks extension against our fixture server.

The subject is the client's task handling (following a task, input inside it, polling,
cancelling), not the process boundary, so the server runs in memory (``Client(server)``:
the stdio server code over memory streams, every message encoded and decoded).  The
stdio path itself is covered by test_client_against_mcpkit.py and the transport tests."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from clientkit import fixture_object

from mcpkit import McpError, Server
from mcpkit.client import Client, ElicitResult, Task, TaskCancelled

SERVER: Server = fixture_object("asyncio")

pytestmark = pytest.mark.anyio


async def confirm(params: dict[str, Any]) -> ElicitResult:
    return {"action": "accept", "content": {"confirm": True, "name": "Ada"}}


async def test_call_tool_follows_a_task_to_its_result() -> None:
    async with Client(SERVER, tasks=True, elicitation=confirm) as client:
        result = await client.call_tool("slow_compute", {"seconds": 0.3, "label": "x"})
        assert result["content"][0]["text"] == "Computed x after 0.3s"
        # input inside the task is answered through tasks/update with the same callback
        done = await client.call_tool("confirm_delete", {"filename": "a.txt"})
        assert done["content"][0]["text"] == "Deleted a.txt"
        both = await client.call_tool("multi_input", {})
        assert both["content"][0]["text"] == "Got Ada and Ada"


async def test_task_handle_cancel_and_failures() -> None:
    async with Client(SERVER, tasks=True) as client:
        task = await client.start_tool_task("slow_compute", {"seconds": 60})
        assert isinstance(task, Task) and task.status == "working"
        await task.cancel()
        with pytest.raises(TaskCancelled):
            await task.result(timeout=10)
        failing = await client.call_tool("failing_job", {})
        assert failing.get("isError") is True
        with pytest.raises(McpError) as info:
            await client.call_tool("protocol_error_job", {})
        assert info.value.code == -32603


async def test_polling_honours_poll_interval() -> None:
    async with Client(SERVER, tasks=True) as client:
        task = await client.start_tool_task("slow_compute", {"seconds": 1.0})
        assert isinstance(task, Task)
        polls = 0
        original = task.refresh

        async def counting() -> dict[str, Any]:
            nonlocal polls
            polls += 1
            return await original()

        task.refresh = counting  # type: ignore[method-assign]
        with anyio.fail_after(10):
            await task
        interval_s = task.last["pollIntervalMs"] / 1000
        assert polls <= 1.0 / interval_s + 2  # never faster than the server asked


async def test_without_the_extension_a_required_task_tool_is_refused() -> None:
    async with Client(SERVER) as client:
        with pytest.raises(McpError) as info:
            await client.call_tool("failing_job", {})
        assert info.value.code == -32021


# --------------------------------------------------------------------------- 2025-11-25 core tasks


async def test_legacy_call_tool_follows_a_required_task() -> None:
    """On a 2025-11-25 server a tool whose listing requires a task is called as one, and
    input inside it reaches the callback through tasks/result."""
    async with Client(SERVER, era="legacy", elicitation=confirm) as client:
        assert client.era == "legacy"
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["confirm_delete"]["execution"] == {"taskSupport": "required"}
        seen: list[str] = []

        async def status(task: dict[str, Any]) -> None:
            seen.append(task["status"])

        done = await client.call_tool("confirm_delete", {"filename": "a.txt"}, on_task=status)
        assert done["content"][0]["text"] == "Deleted a.txt"
        assert seen and seen[0] == "working"
        both = await client.call_tool("multi_input", {})
        assert both["content"][0]["text"] == "Got Ada and Ada"
        failing = await client.call_tool("failing_job", {})
        assert failing.get("isError") is True
        with pytest.raises(McpError) as info:
            await client.call_tool("protocol_error_job", {})
        assert info.value.code == -32603


async def test_legacy_start_tool_task_polls_cancels_and_fetches() -> None:
    async with Client(SERVER, era="legacy") as client:
        task = await client.start_tool_task(
            "slow_compute", {"seconds": 0.2, "label": "y"}, ttl_ms=5000
        )
        assert isinstance(task, Task) and task.era == "legacy"
        assert task.last["ttl"] == 5000
        result = await task.result(timeout=10)
        assert result["content"][0]["text"] == "Computed y after 0.2s"
        listed = await client.request("tasks/list")
        assert task.id in [t["taskId"] for t in listed["tasks"]]
        slow = await client.start_tool_task("slow_compute", {"seconds": 60})
        assert isinstance(slow, Task)
        await slow.cancel()
        assert slow.status == "cancelled"
        with pytest.raises(TaskCancelled):
            await slow.result(timeout=10)
        # without tasks=True an optional tool is called at once
        plain = await client.call_tool("slow_compute", {"seconds": 0})
        assert plain["content"][0]["text"] == "Computed result after 0s"
