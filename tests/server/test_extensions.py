"""Custom methods of an extension (``@server.method``, ``@server.notification_handler``,
``ctx.notify``), in memory on both eras: declared under ``capabilities.extensions``, typed
params and results, seen by middleware, and -32601 for a method nobody registered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from mcpkit import Context, Server
from mcpkit.client import Client, InvalidResultError, ServerError
from mcpkit.server import Middleware
from mcpkit.server.middleware import CallNext
from support.schema import validate_definition

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]


@dataclass
class Echoed:
    text: str
    times: int


def make_server(events: list[Any] | None = None, poked: anyio.Event | None = None) -> Server:
    server = Server("ext")
    server.extension("com.example/echo", {"maxTimes": 3})

    @server.method("com.example/echo/say")
    async def say(text: str, ctx: Context, times: int = 1) -> Echoed:
        await ctx.notify("com.example/echo/said", {"text": text})
        return Echoed(text * times, times)

    @server.method("com.example/echo/nothing")
    def nothing() -> None:
        return None

    @server.method("com.example/echo/bad")
    def bad() -> Echoed:
        return "not an Echoed"  # type: ignore[return-value]

    @server.notification_handler("com.example/echo/poke")
    async def poke(who: str) -> None:
        if events is not None:
            events.append(["poked", who])
        if poked is not None:
            poked.set()

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_custom_method_typed_params_and_result(era: str) -> None:
    async with Client(make_server(), era=era) as client:  # type: ignore[arg-type]
        said = await client.request(
            "com.example/echo/say", {"text": "hi", "times": 2}, result_type=Echoed
        )
        raw = await client.request("com.example/echo/say", {"text": "yo"})
        empty = await client.request("com.example/echo/nothing")
    assert said == Echoed("hihi", 2)
    assert raw["text"] == "yo" and raw["times"] == 1
    assert {k: v for k, v in empty.items() if k not in ("resultType", "_meta")} == {}


@pytest.mark.parametrize("era", ERAS)
async def test_extension_declared_in_capabilities(era: str) -> None:
    server = make_server()
    async with Client(server, era=era) as client:  # type: ignore[arg-type]
        caps = client.server_info.capabilities
    if era == "modern":
        assert caps["extensions"] == {"com.example/echo": {"maxTimes": 3}}
    else:  # 2025-11-25 defines no extensions capability; the methods are served all the same
        assert "extensions" not in caps
    validate_definition(
        "2025-11-25" if era == "legacy" else "2026-07-28", "ServerCapabilities", caps
    )


async def test_method_without_declared_settings_declares_its_extension() -> None:
    server = Server("bare")

    @server.method("org.acme/ping2")
    def ping2() -> dict[str, bool]:
        return {"pong": True}

    assert server.capabilities("modern")["extensions"] == {"org.acme/ping2": {}}
    assert "extensions" not in server.capabilities("legacy")


@pytest.mark.parametrize("era", ERAS)
async def test_bad_params_are_invalid_params(era: str) -> None:
    async with Client(make_server(), era=era) as client:  # type: ignore[arg-type]
        with pytest.raises(ServerError) as caught:
            await client.request("com.example/echo/say", {"times": "many"})
    assert caught.value.code == -32602
    assert "text" in str(caught.value) and "times" in str(caught.value)


@pytest.mark.parametrize("era", ERAS)
async def test_unregistered_method_is_still_method_not_found(era: str) -> None:
    async with Client(make_server(), era=era) as client:  # type: ignore[arg-type]
        with pytest.raises(ServerError) as caught:
            await client.request("com.example/echo/unknown")
        with pytest.raises(ServerError) as as_request:  # a notification is not a request
            await client.request("com.example/echo/poke", {"who": "x"})
    assert caught.value.code == -32601
    assert as_request.value.code == -32601


async def test_a_result_breaking_its_type_is_an_internal_error() -> None:
    async with Client(make_server()) as client:
        with pytest.raises(ServerError) as caught:
            await client.request("com.example/echo/bad")
    assert caught.value.code == -32603


async def test_client_result_type_mismatch_is_invalid_result() -> None:
    async with Client(make_server()) as client:
        with pytest.raises(InvalidResultError, match=r"com\.example/echo/nothing"):
            await client.request("com.example/echo/nothing", result_type=Echoed)


@pytest.mark.parametrize("era", ERAS)
async def test_handler_notification_reaches_the_client(era: str) -> None:
    got: list[dict[str, Any]] = []
    seen_by_callback: list[str] = []
    async with Client(
        make_server(),
        era=era,  # type: ignore[arg-type]
        on_notification=lambda note: seen_by_callback.append(note.method),
    ) as client:
        arrived = anyio.Event()
        client.on_notification("com.example/echo/said", lambda params: arrived.set())
        client.on_notification("com.example/echo/said", got.append)
        await client.request("com.example/echo/say", {"text": "ping"})
        with anyio.fail_after(5):
            await arrived.wait()
    assert got == [{"text": "ping"}]
    assert "com.example/echo/said" in seen_by_callback


@pytest.mark.parametrize("era", ERAS)
async def test_client_notification_runs_its_handler(era: str) -> None:
    events: list[Any] = []
    poked = anyio.Event()
    async with Client(make_server(events, poked), era=era) as client:  # type: ignore[arg-type]
        await client.notify("com.example/echo/poke", {"who": "ada"})
        with anyio.fail_after(5):
            await poked.wait()
    assert events == [["poked", "ada"]]


class Recorder(Middleware):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.seen.append(("request", ctx.method))
        return await call_next(ctx)

    async def on_notification(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.seen.append(("notification", ctx.method))
        return await call_next(ctx)


@pytest.mark.parametrize("era", ERAS)
async def test_middleware_sees_custom_methods(era: str) -> None:
    poked = anyio.Event()
    server = make_server(None, poked)
    recorder = Recorder()
    server.add_middleware(recorder)

    @server.method("com.example/echo/late")  # registered after the middleware
    def late() -> dict[str, str]:
        return {"late": "yes"}

    async with Client(server, era=era) as client:  # type: ignore[arg-type]
        await client.request("com.example/echo/say", {"text": "a"})
        assert (await client.request("com.example/echo/late"))["late"] == "yes"
        await client.notify("com.example/echo/poke", {"who": "b"})
        with anyio.fail_after(5):
            await poked.wait()
    assert ("request", "com.example/echo/say") in recorder.seen
    assert ("request", "com.example/echo/late") in recorder.seen
    assert ("notification", "com.example/echo/poke") in recorder.seen


def test_registration_refuses_bad_names() -> None:
    server = Server("names")

    def fn() -> None:
        return None

    with pytest.raises(ValueError, match="method of MCP itself"):
        server.method("tools/call", extension="com.example/x")(fn)
    with pytest.raises(ValueError, match="cannot derive an extension"):
        server.method("thing")(fn)
    with pytest.raises(ValueError, match="extension identifier"):
        server.method("a/b", extension="no-prefix")(fn)
    with pytest.raises(ValueError, match="reserved by JSON-RPC"):
        server.method("rpc.x", extension="com.example/x")(fn)
    server.method("com.example/x/one")(fn)
    with pytest.raises(ValueError, match="already registered"):
        server.method("com.example/x/one")(fn)


async def test_ctx_notify_refuses_an_mcp_notification() -> None:
    server = Server("notify")

    @server.method("com.example/n/go")
    async def go(ctx: Context) -> dict[str, str]:
        try:
            await ctx.notify("notifications/progress", {})
        except ValueError as exc:
            return {"refused": str(exc)}
        return {"refused": ""}

    async with Client(server) as client:
        answer = await client.request("com.example/n/go")
    assert "MCP itself" in answer["refused"]


async def test_client_notification_handler_failure_does_not_break_the_connection() -> None:
    def broken(params: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    async with Client(make_server()) as client:
        client.on_notification("com.example/echo/said", broken)
        with anyio.fail_after(10):
            first = await client.request("com.example/echo/say", {"text": "1"})
            second = await client.request("com.example/echo/say", {"text": "2"})
    assert (first["text"], second["text"]) == ("1", "2")


def test_a_mount_does_not_advertise_a_childs_custom_methods() -> None:
    """Mounts route tools, resources and prompts, not custom methods: the parent must not
    declare an extension whose methods it would answer with -32601."""
    child = make_server()

    @child.method("org.other/thing/do")
    def do() -> dict[str, bool]:
        return {"done": True}

    child.extensions["io.modelcontextprotocol/ui"] = {}
    parent = Server("parent")
    parent.mount(child, namespace="c")
    assert child.capabilities()["extensions"].keys() == {
        "io.modelcontextprotocol/ui",
        "com.example/echo",
        "org.other/thing",
    }
    assert parent.capabilities()["extensions"] == {"io.modelcontextprotocol/ui": {}}


@pytest.mark.parametrize("era", ERAS)
async def test_a_custom_method_may_ask_for_input(era: str) -> None:
    """2026-07-28: an ``InputRequiredResult``, and the retry with the answer completes;
    2025-11-25: an ``elicitation/create`` request to the client's callback."""
    server = Server("asks")

    @server.method("com.example/ask/name")
    async def ask(ctx: Context) -> dict[str, str]:
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {}})
        return {"name": str((answer.get("content") or {}).get("name"))}

    async def reply(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with Client(server, era=era, elicitation=reply) as client:  # type: ignore[arg-type]
        first = await client.request("com.example/ask/name")
        if era == "modern":
            assert first["resultType"] == "input_required"
            (key,) = first["inputRequests"]
            first = await client.request(
                "com.example/ask/name",
                {
                    "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                    "requestState": first["requestState"],
                },
            )
    assert first["name"] == "Ada"
