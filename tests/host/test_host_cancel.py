"""A person cancels a running tool call: the server is told (``notifications/cancelled`` on
stdio in both eras; the response stream closed on Streamable HTTP) and the handler stops.
Real server processes; the server records ``slow-cancelled`` when its handler is cancelled.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostkit import SERVERS, calls, stdio_server

from mcpkit.host import Host, HostConfig, Permission, ServerConfig, ToolCancelled
from mcpkit.host.loop import Conversation
from mcpkit.host.models import ModelReply, ToolCall
from mcpkit.host.models.scripted import ScriptedModel
from support.servers import free_port, kill_group, spawn, wait_http

pytestmark = pytest.mark.anyio


async def until(check: Any) -> None:
    """Poll a condition the test waits for (bounded, so a failure cannot hang)."""
    with anyio.fail_after(20):
        while not check():
            await anyio.sleep(0.02)


async def cancel_a_slow_call(host: Host, folder: Path) -> None:
    started = anyio.Event()
    outcome: list[BaseException] = []

    async def run() -> None:
        try:
            await host.call_tool(
                "alpha__slow",
                {"steps": 2000},
                origin="user",
                call_id="x",
                on_progress=lambda params: started.set(),
            )
        except ToolCancelled as exc:
            outcome.append(exc)

    with anyio.fail_after(20):  # a cancel that did nothing would wait out 2000 steps
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            assert host.cancel_call("x")
    assert outcome and isinstance(outcome[0], ToolCancelled)
    assert not host.cancel_call("x")  # nothing runs under that id any more
    await until(lambda: "slow-cancelled" in calls(folder, "alpha"))
    assert host.audit.entries[-1].outcome == "cancelled"
    result = await host.call_tool("alpha__add", {"a": 1, "b": 2}, origin="user")
    assert result["content"][0]["text"] == "alpha: 3"  # the server is still fine


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_cancel_over_stdio_in_both_eras(tmp_path: Path, era: str) -> None:
    config = HostConfig(servers=(stdio_server("alpha", "alpha.py", tmp_path, era=era),))
    async with Host(config) as host:
        await host.connection("alpha").wait_ready()
        assert host.connection("alpha").status()["era"] == era
        await cancel_a_slow_call(host, tmp_path)


@pytest.fixture
def alpha_http(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = spawn(
        [
            sys.executable,
            "-m",
            "mcpkit.cli.main",
            "serve",
            str(SERVERS / "alpha.py"),
            "--http",
            "--port",
            str(port),
            "--state",
            "memory:",
        ],
        tmp_path / "alpha-http.log",
        env={"HOST_TEST_DIR": str(tmp_path)},
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_http(url, proc, tmp_path / "alpha-http.log")
        yield url
    finally:
        kill_group(proc, grace=10.0)


async def test_cancel_over_streamable_http(tmp_path: Path, alpha_http: str) -> None:
    config = HostConfig(servers=(ServerConfig(name="alpha", url=alpha_http, era="modern"),))
    async with Host(config) as host:
        await host.connection("alpha").wait_ready()
        await cancel_a_slow_call(host, tmp_path)


async def test_the_model_is_told_the_person_cancelled(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ModelReply(tool_calls=(ToolCall("t1", "alpha__slow", {"steps": 2000}),)),
            lambda messages: ModelReply(text=messages[-1]["content"][0]["content"][0]["text"]),
        ]
    )
    config = HostConfig(
        servers=(stdio_server("alpha", "alpha.py", tmp_path),),
        server_permissions={"alpha": Permission.ALLOW},
    )
    async with Host(config) as host:

        async def cancel_when_running(kind: str, data: dict[str, Any]) -> None:
            if kind == "progress":
                host.cancel_call("chat:t1")

        async with host.events() as stream, anyio.create_task_group() as tg:

            async def watch() -> None:
                async for kind, data in stream:
                    await cancel_when_running(kind, data)

            tg.start_soon(watch)
            final = await Conversation(host, model).send("count a lot")
            tg.cancel_scope.cancel()
    assert final == "The user cancelled this tool call while it ran."
    await until(lambda: "slow-cancelled" in calls(tmp_path, "alpha"))


async def test_a_task_required_tool_runs_through_the_host(tmp_path: Path) -> None:
    """The host declares the tasks extension, so a ``task="required"`` tool works."""
    config = HostConfig(servers=(stdio_server("alpha", "alpha.py", tmp_path, era="modern"),))
    statuses: list[tuple[str, str]] = []
    async with Host(config) as host:
        await host.connection("alpha").wait_ready()
        async with host.events() as stream, anyio.create_task_group() as tg:

            async def watch() -> None:
                async for kind, data in stream:
                    if kind == "task":  # what the page shows while the task runs
                        statuses.append((data["tool"], data["status"]))

            tg.start_soon(watch)
            result = await host.call_tool("alpha__long_job", {"steps": 3}, origin="user")
            await until(lambda: statuses and statuses[-1][1] == "completed")
            tg.cancel_scope.cancel()
    assert result["content"][0]["text"] == "job done after 3 steps"
    assert calls(tmp_path, "alpha") == ["long_job"]
    assert statuses[0] == ("alpha__long_job", "working")
    assert statuses[-1] == ("alpha__long_job", "completed")
