"""Timeouts, progress, cancellation, and servers that misbehave: the caller always gets a
clear exception within its timeout, and nothing hangs.

Every test runs under ``anyio.fail_after``: a hang is a failure, not a stuck test run.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from clientkit import (
    FIXTURE_SERVER,
    PEERS,
    REPO,
    SLOW_SERVER,
    ServerProcess,
    fixture_object,
)

from mcpkit.client import (
    Client,
    ClientError,
    ConnectError,
    ConnectionClosedError,
    HttpStatusError,
    ProtocolViolationError,
    RequestTimeoutError,
    ServerStartupError,
)
from mcpkit.transports.client_stdio import StdioTransport
from mcpkit.types.versions import EraChoice
from support.servers import free_port, pid_alive, serve_argv

pytestmark = pytest.mark.anyio

BAD_STDIO = PEERS / "bad_stdio.py"


def bad(mode: str, *extra: str) -> list[str]:
    return [sys.executable, str(BAD_STDIO), mode, *extra]


#: Timeouts, progress and cancellation are the client's logic: in memory (which frames and
#: serves every message through the stdio code path) and over real HTTP, both eras.  What
#: only a process can do wrong (garbage, crashes, hangs, shutdown) is tested below with
#: real stdio peers.
SLOW_TARGETS = ["memory-modern", "memory-legacy", "http-modern", "http-legacy"]


def slow_client(kind: str, server: ServerProcess, **kw: Any) -> Client:
    transport, era_name = kind.split("-")
    era: EraChoice = "legacy" if era_name == "legacy" else "modern"
    target = fixture_object("asyncio", SLOW_SERVER) if transport == "memory" else server.url
    return Client(target, cwd=REPO, era=era, **kw)


# --------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize("kind", SLOW_TARGETS)
async def test_timeout_fires_on_time(kind: str, slow_http_server: ServerProcess) -> None:
    with anyio.fail_after(20):
        async with slow_client(kind, slow_http_server) as client:
            started = anyio.current_time()
            with pytest.raises(RequestTimeoutError) as info:
                await client.call_tool("sleep", {"seconds": 10}, timeout=0.5)
            elapsed = anyio.current_time() - started
            assert 0.45 <= elapsed < 1.5, elapsed
            assert not info.value.hard and "tools/call" in str(info.value)
            assert (await client.call_tool("echo", {"text": "still here"}))["content"]


@pytest.mark.parametrize("kind", SLOW_TARGETS)
async def test_progress_extends_up_to_the_hard_maximum(
    kind: str, slow_http_server: ServerProcess
) -> None:
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(20):
        async with slow_client(kind, slow_http_server, max_timeout=1.5) as client:
            # 6 x 0.25 s = 1.5 s of work, timeout 0.6 s: progress keeps it alive.
            result = await client.call_tool(
                "progress", {"steps": 5, "interval": 0.25}, timeout=0.6, on_progress=seen.append
            )
            assert result["content"][0]["text"] == "done after 5 steps"
            assert [p["progress"] for p in seen] == [1, 2, 3, 4, 5]
            # Progress forever: the hard maximum (1.5 s) still ends it.
            started = anyio.current_time()
            with pytest.raises(RequestTimeoutError) as info:
                await client.call_tool("progress", {"steps": 40, "interval": 0.25}, timeout=0.6)
            elapsed = anyio.current_time() - started
            assert info.value.hard and 1.4 <= elapsed < 2.5, elapsed


@pytest.mark.parametrize("kind", SLOW_TARGETS)
async def test_cancelling_the_caller_cancels_the_request(
    kind: str, slow_http_server: ServerProcess, tmp_path: Path
) -> None:
    """In memory (both eras) and HTTP legacy: notifications/cancelled; HTTP modern: the
    stream is closed.  Either way the server's handler sees the cancellation."""
    marker = tmp_path / "marker"
    with anyio.fail_after(20):
        async with slow_client(kind, slow_http_server) as client:
            with anyio.move_on_after(0.7) as scope:
                await client.call_tool("cancellable", {"marker": str(marker)})
            assert scope.cancelled_caught
            for _ in range(50):
                if marker.exists():
                    break
                await anyio.sleep(0.1)
            assert marker.read_text() == "cancelled"
            assert (await client.call_tool("echo", {"text": "after"}))["content"][0][
                "text"
            ] == "after"


# --------------------------------------------------------------------------- bad stdio peers


async def test_stdio_garbage_is_named_in_the_timeout_error() -> None:
    with anyio.fail_after(10):
        async with Client(bad("garbage"), era="modern", discover=False) as client:
            with pytest.raises(RequestTimeoutError) as info:
                await client.call_tool("echo", timeout=1)
    assert "not JSON-RPC" in str(info.value) and "this is { not json" in str(info.value)


async def test_stdio_garbage_during_connect_is_a_startup_error() -> None:
    with anyio.fail_after(10), pytest.raises(ServerStartupError) as info:
        async with Client(bad("garbage"), probe_timeout=0.5, timeout=1, startup_timeout=2):
            pass
    assert "initialize got no answer within its timeout of 1s" in str(info.value)
    assert "not JSON-RPC" in str(info.value)


async def test_stdio_server_exiting_mid_request() -> None:
    with anyio.fail_after(10):
        async with Client(bad("exit-mid"), era="modern") as client:
            started = anyio.current_time()
            with pytest.raises(ConnectionClosedError) as info:
                await client.call_tool("echo", timeout=30)
            assert anyio.current_time() - started < 2
    message = str(info.value)
    assert "exited with code 3" in message and "worker pool exhausted" in message
    assert "tools/call" in message


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_stdio_request_after_the_server_exited_was_never_sent(anyio_backend: str) -> None:
    """asyncio's pipe endpoint and the shared one (trio) word a closed connection alike:
    a request it cut off was pending, one made after it was never sent."""
    with anyio.fail_after(10):
        async with Client(bad("exit-mid"), era="modern") as client:
            with pytest.raises(ConnectionClosedError) as pending:
                await client.call_tool("echo", timeout=30)
            with pytest.raises(ConnectionClosedError) as unsent:
                await client.call_tool("echo", timeout=30)
    assert "exited with code 3 while tools/call was pending" in str(pending.value)
    assert "exited with code 3 while sending tools/call" in str(unsent.value)
    assert "worker pool exhausted" in str(unsent.value)


async def test_stdio_server_that_never_answers() -> None:
    with anyio.fail_after(10):
        started = anyio.current_time()
        with pytest.raises(ServerStartupError) as info:
            async with Client(bad("silent"), probe_timeout=0.5, startup_timeout=1.5):
                pass
        assert anyio.current_time() - started < 4
    assert "1.5s" in str(info.value)


async def test_stdio_server_that_crashes_at_start() -> None:
    with anyio.fail_after(10), pytest.raises(ServerStartupError) as info:
        async with Client(bad("crash")):
            pass
    assert "exited with code 1" in str(info.value)
    assert "cannot open database" in str(info.value)


async def test_missing_executable() -> None:
    with anyio.fail_after(5), pytest.raises(ServerStartupError) as info:
        async with Client(["/nonexistent/mcp-server", "--stdio"]):
            pass
    assert "/nonexistent/mcp-server" in str(info.value)


@pytest.mark.parametrize(
    ("mode", "least", "most"),
    [
        ("ignore-eof", 0.4, 2.0),  # stdin closed, 0.5 s grace, SIGTERM works
        ("ignore-term", 0.9, 3.0),  # SIGTERM ignored too: SIGKILL after a second grace
    ],
)
async def test_shutdown_escalates(mode: str, least: float, most: float) -> None:
    with anyio.fail_after(15):
        client = Client(bad(mode), era="modern", shutdown_grace=0.5)
        async with client:
            await client.call_tool("echo")
            pid = cast(StdioTransport, client.transport).pid
            assert pid is not None
            started = anyio.current_time()
        elapsed = anyio.current_time() - started
    assert least <= elapsed < most, elapsed
    assert not pid_alive(pid)


async def test_shutdown_takes_the_whole_process_tree(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    with anyio.fail_after(15):
        async with Client(bad("grandchild", str(pidfile)), era="modern") as client:
            await client.call_tool("echo")
            child = int(pidfile.read_text())
            assert pid_alive(child)
    for _ in range(30):
        if not pid_alive(child):
            break
        await anyio.sleep(0.1)
    assert not pid_alive(child)


async def test_junk_banner_on_stdout_is_skipped() -> None:
    with anyio.fail_after(10):
        async with Client(bad("print-junk")) as client:
            assert (await client.call_tool("echo"))["content"][0]["text"] == "ok"


@pytest.mark.parametrize(
    "answer",
    [
        {"code": -32601, "message": "Method not found"},
        {"code": -32602, "message": "Invalid request parameters"},
        {"code": -32600, "message": "Session not initialized"},
        {"code": -32000, "message": "Server not initialized"},
        None,  # silence: the probe times out
    ],
    ids=["-32601", "-32602", "-32600", "-32000", "silent"],
)
async def test_fallback_to_initialize_is_not_keyed_on_one_error(answer: Any) -> None:
    arg = json.dumps(answer) if answer is not None else "none"
    with anyio.fail_after(15):
        async with Client(bad("legacy", arg), probe_timeout=0.5) as client:
            assert client.era == "legacy" and client.protocol_version == "2025-11-25"
            result = await client.call_tool("echo")
            assert result["content"][0]["text"] == "legacy echo"


async def test_unsupported_version_is_retried_not_fallen_back_from() -> None:
    with anyio.fail_after(10):
        async with Client(bad("reject-first")) as client:
            assert client.era == "modern"
            assert (await client.call_tool("echo"))["content"][0]["text"] == "ok"


# --------------------------------------------------------------------------- bad HTTP peer


@pytest.mark.parametrize(
    ("path", "error", "words"),
    [
        ("/garbage", ProtocolViolationError, "invalid JSON"),
        ("/sse-garbage", ProtocolViolationError, "not JSON-RPC"),
        ("/close-mid", ConnectionClosedError, "before answering"),
        ("/drop-mid", ConnectionClosedError, "tools/call"),
        ("/html-error", HttpStatusError, "HTTP 500"),
    ],
)
async def test_bad_http_answers(
    path: str, error: type[ClientError], words: str, bad_http_server: ServerProcess
) -> None:
    with anyio.fail_after(10):
        async with Client(bad_http_server.url + path, era="modern") as client:
            started = anyio.current_time()
            with pytest.raises(error) as info:
                await client.call_tool("anything", timeout=5)
            assert anyio.current_time() - started < 3
    assert words in str(info.value)


async def test_http_server_that_never_answers(bad_http_server: ServerProcess) -> None:
    with anyio.fail_after(10):
        async with Client(bad_http_server.url + "/hang", era="modern") as client:
            started = anyio.current_time()
            with pytest.raises(RequestTimeoutError):
                await client.call_tool("anything", timeout=0.5)
            assert anyio.current_time() - started < 1.5


async def test_http_nothing_listening() -> None:
    with anyio.fail_after(15), pytest.raises(ConnectError) as info:
        async with Client(f"http://127.0.0.1:{free_port()}/mcp"):
            pass
    assert "cannot connect" in str(info.value)


async def test_http_legacy_fallback_and_session_expiry(bad_http_server: ServerProcess) -> None:
    """discover gets a plain-text 400 => legacy; a 404 on the session => re-initialize."""
    with anyio.fail_after(10):
        async with Client(bad_http_server.url + "/legacy-only") as client:
            assert client.era == "legacy"
            result = await client.call_tool("who")
            assert result["content"][0]["text"] == "served by session-2"


# --------------------------------------------------------------------------- abrupt listen ends


async def test_listen_raises_when_the_stdio_server_dies() -> None:
    with anyio.fail_after(15):
        client = Client(serve_argv(FIXTURE_SERVER), cwd=REPO, era="modern")
        async with client, client.listen(tools=True) as sub:
            assert sub.filter == {"toolsListChanged": True}
            pid = cast(StdioTransport, client.transport).pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(ConnectionClosedError, match="exited with code -9"):
                async for _ in sub:
                    pass


async def test_listen_raises_when_the_http_stream_just_ends(
    bad_http_server: ServerProcess,
) -> None:
    with anyio.fail_after(10):
        client = Client(bad_http_server.url + "/listen-drop", era="modern")
        async with client, client.listen(tools=True) as sub:
            assert sub.filter == {"toolsListChanged": True}
            with pytest.raises(ConnectionClosedError, match="without ending it"):
                async for _ in sub:
                    pass
