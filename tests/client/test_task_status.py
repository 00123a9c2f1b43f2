"""``notifications/tasks/status`` (2025-11-25): a task's status changes reach the session
that created it, over real processes (the fixture server on stdio and on Streamable HTTP,
where they travel on the session's GET stream), and never another session.

The client receives them with ``client.on_notification`` and its :class:`Task` handle
takes them as they come (``task.last``), without waiting for its next poll."""

from __future__ import annotations

import anyio
import pytest
from clientkit import ServerProcess
from test_client_against_mcpkit import target_for

from mcpkit.client import Client, Task
from support.schema import validate_outgoing
from support.waits import Notices

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_status_changes_reach_the_creating_session_only(
    transport: str, http_server: ServerProcess
) -> None:
    target = target_for(transport, http_server)
    mine, theirs = Notices(), Notices()
    with anyio.fail_after(20):
        async with (
            Client(target, era="legacy", cwd=http_server.log.parent) as client,
            Client(target, era="legacy", cwd=http_server.log.parent) as other,
        ):
            client.on_notification("notifications/tasks/status", mine)
            other.on_notification("notifications/tasks/status", theirs)
            task = await client.start_tool_task("slow_compute", {"seconds": 0.5, "label": "n"})
            assert isinstance(task, Task)
            done = await mine.wait_for(taskId=task.id, status="completed")
            assert "ttl" in done and "ttlMs" not in done
            note = {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": done}
            validate_outgoing("2025-11-25", note)
            slow = await client.start_tool_task("slow_compute", {"seconds": 60})
            assert isinstance(slow, Task)
            await other.request("tasks/list")  # the other session is alive and served
            await slow.cancel()
            await mine.wait_for(taskId=slow.id, status="cancelled")
    assert theirs.seen == []


async def test_a_task_handle_takes_the_notified_status(http_server: ServerProcess) -> None:
    """A task whose poll interval is long still ends as soon as its status notification
    arrives: the handle follows the notification, not its next ``tasks/get``."""
    with anyio.fail_after(20):
        async with Client(http_server.url, era="legacy") as client:
            task = await client.start_tool_task("slow_compute", {"seconds": 0.3, "label": "h"})
            assert isinstance(task, Task)
            task.last["pollInterval"] = 600_000  # no poll would come within the test
            result = await task.result(timeout=30)
    assert result["content"][0]["text"] == "Computed h after 0.3s"
