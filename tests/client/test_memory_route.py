"""``Client(server)`` in memory runs the route a stdio server runs: the same reader loop and
the same request runner (``runtime/runner.py``).  Each scenario runs over memory and over a
real ``mcpkit serve`` process on pipes, and must come out the same: the task a call runs
in, the order of answers, cancellation."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from clientkit import fixture_object

from mcpkit.client import Client
from mcpkit.runtime.endpoint import Endpoint
from mcpkit.transports.stdio_io import PipeEndpoint
from support.servers import SERVERS_DIR, serve_argv

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("route", ["memory", "stdio"])]

INLINE_SERVER = SERVERS_DIR / "inline_server.py"


def target(route: str) -> Any:
    if route == "memory":
        return fixture_object("asyncio", INLINE_SERVER)
    return serve_argv(INLINE_SERVER)


async def text_of(client: Client, name: str, **arguments: Any) -> str:
    result = await client.call_tool(name, arguments)
    return str(result["content"][0]["text"])


async def test_the_pipe_endpoint_changes_nothing_of_the_request_route(route: str) -> None:
    # What stdio on asyncio pipes uses differs from the endpoint memory uses only in how
    # it writes and waits for answers to its own requests.
    route_methods = ("run", "_read", "_line", "_register", "_serve", "_notification")
    for name in route_methods:
        assert getattr(PipeEndpoint, name) is getattr(Endpoint, name), name


async def test_an_async_tool_that_never_waits_takes_no_task_of_its_own(route: str) -> None:
    async with Client(target(route)) as client:
        first = await text_of(client, "task_name")
        assert await text_of(client, "task_name") == first


async def test_a_call_that_waits_ends_in_the_task_its_first_step_ran_in(route: str) -> None:
    async with Client(target(route)) as client:
        assert await text_of(client, "same_task") == "same task"


async def test_a_waiting_call_does_not_hold_up_the_next(route: str) -> None:
    answered: list[str] = []

    async def call(name: str, arguments: dict[str, Any]) -> None:
        answered.append(await text_of(client, name, **arguments))

    async with Client(target(route)) as client, anyio.create_task_group() as tg:
        tg.start_soon(call, "later", {"seconds": 0.3})
        await anyio.sleep(0.05)
        tg.start_soon(call, "echo", {"text": "meanwhile"})
    assert answered == ["meanwhile", "waited 0.3"]


async def test_cancelling_a_waiting_call_cancels_it_and_the_connection_goes_on(
    route: str,
) -> None:
    tag = f"cancel-{route}"
    async with Client(target(route)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: text_of(client, "hang", tag=tag))
            with anyio.fail_after(10):
                while tag not in (await text_of(client, "status")).partition(";")[0]:
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
        with anyio.fail_after(10):
            while tag not in (await text_of(client, "status")).partition(";")[2]:
                await anyio.sleep(0.02)
        assert await text_of(client, "echo", text="still serving") == "still serving"
