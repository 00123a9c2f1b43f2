"""The 2024-11-05 HTTP+SSE client transport against the official SDK's ``sse_app()``.

The server is ``peers/sdk_server.py --sse``, run by the official MCP Python SDK (a test
peer in its own cached venv, see ``tests/support/sdk_venv.py``) on a real socket: GET
``/sse`` gives an ``endpoint`` event, POSTs to ``/messages/?session_id=...`` are answered
on the stream.  ``Client(url)`` finds it the way the spec's backwards-compatibility
section says: the POST of ``initialize`` is refused (405), so the client GETs the same URL
and takes the ``endpoint`` event as proof of the old transport.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from clientkit import PEERS, TESTS, ServerProcess, start_server

from mcpkit.client import (
    Client,
    ConnectError,
    ConnectionClosedError,
    ElicitResult,
    HttpStatusError,
    ProtocolViolationError,
    VersionNegotiationError,
    prompt_ref,
)
from mcpkit.transports.client_sse import SseTransport
from mcpkit.types.versions import EraChoice
from support.sdk_venv import sdk_python
from support.servers import free_port

pytestmark = pytest.mark.anyio


def _start(tmp: Any) -> ServerProcess:
    port = free_port()
    argv = [str(sdk_python()), str(PEERS / "sdk_server.py"), "--sse", "--port", str(port)]
    return start_server(argv, port, f"http://127.0.0.1:{port}/sse", tmp / "log.txt")


@pytest.fixture(scope="module")
def sse_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = _start(tmp_path_factory.mktemp("sdk-sse"))
    yield server
    server.stop()


async def ask(params: dict[str, Any]) -> ElicitResult:
    assert params["message"] == "What is your name?"
    return {"action": "accept", "content": {"name": "Grace"}}


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_auto_falls_back_to_http_sse_and_everything_works(
    sse_server: ServerProcess, era: EraChoice
) -> None:
    async with Client(sse_server.url, era=era, elicitation=ask) as client:
        assert isinstance(client.transport, SseTransport)
        assert client.era == "legacy"
        assert client.server_info.implementation["name"] == "interop-sdk-server"
        assert client.transport.messages_url is not None
        assert "/messages/?session_id=" in client.transport.messages_url
        names = {tool["name"] for tool in await client.list_tools()}
        assert {"add", "shout", "ask_name_legacy"} <= names
        added = await client.call_tool("add", {"a": 2, "b": 40}, result_type=int)
        assert added.data == 42 and added["content"][0]["text"] == "42"
        # a server->client elicitation/create arrives on the stream, is answered by POST
        greeted = await client.call_tool("ask_name_legacy")
        assert greeted["content"][0]["text"] == "Hello, Grace!"
        read = await client.read_resource("interop://items/7")
        assert read["contents"][0]["text"] == '{"id": "7"}'
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        assert "x = 1" in prompt["messages"][0]["content"]["text"]
        done = await client.complete(prompt_ref("review"), "language", "p")
        assert done["completion"]["values"] == ["python", "pascal", "perl"]
        await client.ping()
        # concurrent requests are matched to their answers by id
        async with anyio.create_task_group() as tg:
            results: dict[int, Any] = {}

            async def call(i: int) -> None:
                results[i] = (await client.call_tool("add", {"a": i, "b": i}))["content"]

            for i in range(10):
                tg.start_soon(call, i)
        assert results == {i: [{"type": "text", "text": str(2 * i)}] for i in range(10)}


async def test_sse_option_skips_the_streamable_http_attempt(sse_server: ServerProcess) -> None:
    async with Client(sse_server.url, sse=True) as client:  # auto: legacy, no probe
        assert isinstance(client.transport, SseTransport) and client.era == "legacy"
        assert (await client.call_tool("shout", {"text": "direct"}))["content"][0][
            "text"
        ] == "DIRECT"
    with pytest.raises(VersionNegotiationError, match=r"HTTP\+SSE"):
        async with Client(sse_server.url, sse=True, era="modern"):
            pass


async def test_a_quiet_stream_outlives_a_short_client_timeout(sse_server: ServerProcess) -> None:
    async with (
        httpx.AsyncClient(timeout=0.3) as http,
        Client(sse_server.url, sse=True, http_client=http) as client,
    ):
        await anyio.sleep(1.0)  # the GET stream carries nothing meanwhile
        assert (await client.call_tool("shout", {"text": "still"}))["content"][0]["text"] == "STILL"


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_on_trio(sse_server: ServerProcess) -> None:
    async with Client(sse_server.url, elicitation=ask) as client:
        assert isinstance(client.transport, SseTransport)
        greeted = await client.call_tool("ask_name_legacy")
        assert greeted["content"][0]["text"] == "Hello, Grace!"


def test_the_example_reaches_the_sdk_server(sse_server: ServerProcess) -> None:
    example = TESTS.parent / "examples" / "legacy_sse_client.py"
    out = subprocess.run(
        [sys.executable, str(example), sse_server.url, "shout", '{"text": "old but gold"}'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "connected over SseTransport: interop-sdk-server (legacy era" in out.stdout
    assert "shout -> OLD BUT GOLD" in out.stdout


async def test_modern_only_client_does_not_fall_back(sse_server: ServerProcess) -> None:
    with pytest.raises(HttpStatusError) as info:
        async with Client(sse_server.url, era="modern"):
            pass
    assert info.value.status == 405


async def test_a_url_that_is_neither_says_both_failed(sse_server: ServerProcess) -> None:
    wrong = sse_server.url.replace("/sse", "/nothing-here")
    with pytest.raises(ConnectError, match=r"(?s)404.*HTTP\+SSE server it failed too.*404"):
        async with Client(wrong):
            pass


async def test_server_death_fails_pending_requests_clearly(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = _start(tmp_path_factory.mktemp("sdk-sse-dying"))
    try:
        async with Client(server.url, era="legacy") as client:
            assert (await client.call_tool("shout", {"text": "hi"}))["content"][0]["text"] == "HI"
            server.stop()
            with anyio.fail_after(15), pytest.raises(ConnectionClosedError):
                await client.call_tool("shout", {"text": "again"})
    finally:
        server.stop()


async def _serve_endpoint_event(data: str, seen: list[tuple[str, str | None]] | None = None) -> Any:
    """A real socket server whose SSE stream announces ``data`` as its endpoint; it
    accepts POSTs with 202 and notes each request's method and Authorization in ``seen``."""
    import uvicorn

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if seen is not None:
            headers = dict(scope["headers"])
            authorization = headers.get(b"authorization")
            seen.append((scope["method"], authorization.decode() if authorization else None))
        if scope["method"] == "POST":
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send(
            {
                "type": "http.response.body",
                "more_body": True,
                "body": f"event: endpoint\ndata: {data}\n\n".encode(),
            }
        )
        await anyio.sleep(5)

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
    )
    server.capture_signals = __import__("contextlib").nullcontext  # type: ignore[method-assign]
    return server, f"http://127.0.0.1:{port}/sse"


async def test_an_endpoint_on_another_origin_is_refused() -> None:
    server, url = await _serve_endpoint_event("http://attacker.example/messages")
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        with pytest.raises(ProtocolViolationError, match="another origin"):
            async with SseTransport(url):
                pass
        server.should_exit = True


async def test_a_given_client_keeps_its_own_auth() -> None:
    """Without ``auth=``, the stream and the POSTs go out with the given client's own auth
    (a per-request ``auth=None`` turns an httpx client's auth off)."""
    seen: list[tuple[str, str | None]] = []
    server, url = await _serve_endpoint_event("/messages?session_id=1", seen)
    expected = httpx.BasicAuth("ada", "secret")._auth_header
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        async with (
            httpx.AsyncClient(auth=httpx.BasicAuth("ada", "secret")) as http,
            SseTransport(url, http_client=http) as transport,
        ):
            await transport.notify("notifications/initialized")
        server.should_exit = True
    assert seen == [("GET", expected), ("POST", expected)]
