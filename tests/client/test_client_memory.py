"""``Client(server)``: the in-memory transport runs the real protocol path, both eras.

No process, no socket: but every message is encoded, framed, decoded and served by the
stdio server code, so MRTR rounds carry sealed ``requestState``, legacy clients go through
``initialize`` and get server->client requests, cancellation is a
``notifications/cancelled`` on the wire.  A transport that recorded the client's bytes
shows it.  Runs on asyncio and trio.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
import pytest
from clientkit import fixture_object

from mcpkit import Context, Server
from mcpkit.client import Client, ConnectionClosedError, ElicitResult, Notification, ServerError
from mcpkit.transports.memory import MemoryTransport
from mcpkit.types.versions import EraChoice

# No process or socket here, so both backends (tests/client defaults to asyncio).
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])]


@pytest.fixture
def fixture_server(anyio_backend: str) -> Server:
    """The conformance fixture server, one object per backend."""
    server: Server = fixture_object(anyio_backend)
    return server


class RecordingTransport(MemoryTransport):
    """Keeps every line the client wrote, decoded, to check what went over the wire."""

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.sent: list[dict[str, Any]] = []

    async def _write(self, data: bytes) -> None:
        self.sent.append(orjson.loads(data))
        await super()._write(data)


async def name_is_ada(params: dict[str, Any]) -> ElicitResult:
    return {"action": "accept", "content": {"name": "Ada", "ok": True}}


@pytest.mark.parametrize("era", ["modern", "legacy", "auto"])
async def test_each_era_lists_and_calls(era: EraChoice, fixture_server: Server) -> None:
    async with Client(fixture_server, era=era) as client:
        assert client.era == ("legacy" if era == "legacy" else "modern")
        assert client.transport.kind == "memory"
        names = {tool["name"] for tool in await client.list_tools()}
        assert {"greet", "test_simple_text"} <= names
        result = await client.call_tool("greet", {"name": "Bo"})
        assert result["content"] == [{"type": "text", "text": "Hello, Bo!"}]
        prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "x", "arg2": "y"})
        assert prompt["messages"]
        read = await client.read_resource("test://static-text")
        assert read["contents"][0]["uri"] == "test://static-text"


async def test_modern_mrtr_round_echoes_the_sealed_request_state(fixture_server: Server) -> None:
    transport = RecordingTransport(fixture_server)
    async with Client(transport, era="modern", elicitation=name_is_ada) as client:
        result = await client.call_tool("test_input_required_result_request_state")
    assert result["content"][0]["text"] == "Confirmed with state-ok"
    calls = [m for m in transport.sent if m.get("method") == "tools/call"]
    assert len(calls) == 2, "one input_required round, then the retry"
    first, retry = calls[0]["params"], calls[1]["params"]
    assert "requestState" not in first
    assert isinstance(retry["requestState"], str) and len(retry["requestState"]) > 20
    assert retry["inputResponses"]["confirm"]["action"] == "accept"
    meta = retry["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert "elicitation" in meta["io.modelcontextprotocol/clientCapabilities"]


async def test_tampered_request_state_is_refused_by_the_server(fixture_server: Server) -> None:
    async with Client(fixture_server, era="modern", elicitation=name_is_ada) as client:
        first = await client.request(
            "tools/call", {"name": "test_input_required_result_tampered_state"}
        )
        assert first["resultType"] == "input_required"
        state = first["requestState"]
        forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        with pytest.raises(ServerError) as info:
            await client.request(
                "tools/call",
                {
                    "name": "test_input_required_result_tampered_state",
                    "requestState": forged,
                    "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
                },
            )
    assert info.value.code == -32602


async def test_legacy_session_initializes_and_answers_server_requests(
    fixture_server: Server,
) -> None:
    transport = RecordingTransport(fixture_server)
    async with Client(transport, era="legacy", elicitation=name_is_ada) as client:
        result = await client.call_tool("test_input_required_result_multi_round")
        # on legacy the two questions are elicitation/create requests to us, not rounds
    assert result["content"][0]["text"] == "Ada likes None."
    methods = [m.get("method") for m in transport.sent if "method" in m]
    assert methods[:2] == ["initialize", "notifications/initialized"]
    assert methods.count("tools/call") == 1
    answers = [m for m in transport.sent if "result" in m]
    assert len(answers) == 2 and all(a["result"]["action"] == "accept" for a in answers)


async def test_notifications_progress_log_and_list_changes(fixture_server: Server) -> None:
    logs: list[dict[str, Any]] = []
    progress: list[dict[str, Any]] = []
    async with Client(
        fixture_server, era="modern", on_log=logs.append, log_level="debug"
    ) as client:
        await client.call_tool("test_tool_with_logging")
        await client.call_tool("test_tool_with_progress", on_progress=progress.append)
        async with client.listen(tools=True) as changes:
            assert changes.filter.get("toolsListChanged") is True
            await client.call_tool("test_trigger_tool_change")
            with anyio.fail_after(5):
                note = await changes.__anext__()
    assert logs and all("level" in entry for entry in logs)
    assert [p["progress"] for p in progress] == sorted(p["progress"] for p in progress)
    assert len(progress) >= 2
    assert isinstance(note, Notification)
    assert note.method == "notifications/tools/list_changed"


async def test_legacy_list_change_reaches_on_notification(fixture_server: Server) -> None:
    seen: list[str] = []
    async with Client(
        fixture_server, era="legacy", on_notification=lambda n: seen.append(n.method)
    ) as client:
        await client.call_tool("test_trigger_prompt_change")
        with anyio.fail_after(5):
            while "notifications/prompts/list_changed" not in seen:
                await anyio.sleep(0.01)


def _blocking_server() -> tuple[Server, dict[str, anyio.Event]]:
    server = Server("blocking", "1.0.0")
    events = {"started": anyio.Event(), "cancelled": anyio.Event()}

    @server.tool
    async def wait_forever(ctx: Context) -> str:
        events["started"].set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            events["cancelled"].set()
            raise
        return "unreachable"

    return server, events


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_cancelling_a_call_cancels_the_handler(era: EraChoice) -> None:
    server, events = _blocking_server()
    transport = RecordingTransport(server)
    async with Client(transport, era=era) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "wait_forever")
            with anyio.fail_after(5):
                await events["started"].wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(5):
            await events["cancelled"].wait()
        # the connection is still usable after the cancellation
        assert [t["name"] for t in await client.list_tools()] == ["wait_forever"]
    cancelled = [m for m in transport.sent if m.get("method") == "notifications/cancelled"]
    assert len(cancelled) == 1


async def test_tasks_run_to_their_result_over_memory(fixture_server: Server) -> None:
    async with Client(fixture_server, era="modern", tasks=True, elicitation=name_is_ada) as client:
        result = await client.call_tool("slow_compute", {"seconds": 0.05, "label": "m"})
        assert result["content"][0]["text"] == "Computed m after 0.05s"
        done = await client.call_tool("test_tool_with_task")
        assert done["content"][0]["text"] == "Hello from the task, Ada!"


async def test_lifespan_runs_once_for_concurrent_clients_and_failure_is_explained() -> None:
    entered: list[int] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        entered.append(1)
        yield

    server = Server("life", "1.0.0", lifespan=lifespan)

    @server.tool
    def ping_tool() -> str:
        return "pong"

    async with Client(server) as one, Client(server, era="legacy") as two:
        assert (await one.call_tool("ping_tool"))["content"][0]["text"] == "pong"
        assert (await two.call_tool("ping_tool"))["content"][0]["text"] == "pong"
    assert entered == [1]

    @contextlib.asynccontextmanager
    async def broken(server: Server) -> AsyncIterator[None]:
        raise RuntimeError("database unreachable")
        yield

    with pytest.raises(ConnectionClosedError, match="database unreachable"):
        async with Client(Server("broken", "1.0.0", lifespan=broken), era="modern"):
            pass


async def test_a_server_object_is_not_mistaken_for_a_transport(fixture_server: Server) -> None:
    client = Client(fixture_server)
    assert isinstance(client.transport, MemoryTransport)
    assert client.transport.server_key.startswith("memory:mcpkit-conformance-server@")
