"""What a proxy's upstream connection (``mcpkit.compose.upstream``, shared with the
gateway) adds to ``proxy()``: lists served from the connection's cache
(``shared_lists``), and an unmount at run time that lets the calls in flight finish on
the old upstream.  In memory: the upstream is a ``Server`` object."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.compose import ProxyServer
from mcpkit.server import CallNext, Context, Middleware

pytestmark = pytest.mark.anyio


class CountLists(Middleware):
    def __init__(self) -> None:
        self.lists = 0

    async def on_list_tools(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.lists += 1
        return await call_next(ctx)


def upstream(gate: anyio.Event | None = None) -> tuple[Server, CountLists]:
    counter = CountLists()
    server = Server("up", middleware=[counter])

    @server.tool
    async def wait(text: str) -> str:
        if gate is not None:
            await gate.wait()
        return f"done {text}"

    return server, counter


async def test_shared_lists_come_from_the_connection_cache() -> None:
    server, counter = upstream()
    front = ProxyServer(server, shared_lists=True, health_interval=0)
    async with Client(front, era="modern", cache=False) as client:
        for _ in range(3):
            tools = await client.list_tools()
            assert [t["name"] for t in tools] == ["wait"]
        assert counter.lists == 1  # one upstream list served all three
        server.tool(lambda: "new", name="added")  # the upstream says its list changed
        with anyio.fail_after(5):
            while [t["name"] for t in await client.list_tools()] != ["wait", "added"]:
                await anyio.sleep(0.01)
        assert counter.lists == 2
    plain, plain_counter = upstream()
    async with Client(ProxyServer(plain, health_interval=0), era="modern", cache=False) as client:
        for _ in range(2):
            await client.list_tools()
    assert plain_counter.lists == 2  # without the option every list is the upstream's


async def test_an_unmount_lets_calls_in_flight_finish() -> None:
    gate = anyio.Event()
    server, _ = upstream(gate)
    main = Server("main")
    main.mount(ProxyServer(server, health_interval=0), namespace="up")
    answers: list[str] = []
    async with Client(main, era="modern") as client, anyio.create_task_group() as tg:

        async def call() -> None:
            result = await client.call_tool("up_wait", {"text": "x"})
            answers.append(str(result["content"][0]["text"]))

        tg.start_soon(call)
        await anyio.sleep(0.2)  # the call is waiting at the upstream
        main.unmount("up")
        await anyio.sleep(0.2)
        gate.set()
    assert answers == ["done x"]
