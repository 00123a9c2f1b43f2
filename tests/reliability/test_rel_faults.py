"""Fault scenarios with real processes (plan D5/L4, E3, L6 and a state-backend restart).

* a stdio server killed with SIGKILL mid-call: every pending call of the mcpkit Client
  fails within 500 ms with a clear error, repeatedly;
* a client that goes away mid-call: the server's handler is cancelled and cleans up;
* SIGTERM with 100 calls in flight on ``mcpkit serve --http``: all finish, none is lost,
  new connections are refused, exit code 0;
* Redis restarted (with persistence) under a running replica: requests fail cleanly while
  it is down and succeed after; no task is lost.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx
import pytest
from anyio.abc import SocketAttribute
from relkit import (
    ROOT,
    ServerProcess,
    call_tool,
    fd_count,
    next_id,
    persistent_redis,
    rel_server_argv,
)

from mcpkit.client import Client, ClientError, ConnectionClosedError
from mcpkit.transports.client_stdio import StdioTransport
from support.mcp import modern_headers, modern_request, sse_json
from support.servers import free_port
from support.waits import poll

if TYPE_CHECKING:
    from conftest import Rel

CYCLES = int(os.environ.get("MCPKIT_KILL_CYCLES", "5"))


def records(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# ------------------------------ SIGKILL mid-call (D5, L4)


@pytest.mark.anyio
@pytest.mark.slow
async def test_d5_sigkill_mid_call_fails_every_pending_call_within_500ms(
    rel: Rel, tmp_path: Path
) -> None:
    record = tmp_path / "record.txt"
    record.touch()
    env = {"MCPKIT_SEALING_KEYS": "k", "MCPKIT_REL_RECORD": str(record)}
    worst = 0.0
    for cycle in range(CYCLES):
        async with Client(rel_server_argv(), cwd=tmp_path, env=env, timeout=60) as client:
            pid = cast(StdioTransport, client.transport).pid
            assert pid is not None
            tags = [f"{cycle}-{i}-{uuid.uuid4().hex[:6]}" for i in range(10)]
            failures: dict[str, tuple[float, BaseException | None]] = {}

            async def call(
                tag: str, client: Client = client, failures: dict[str, Any] = failures
            ) -> None:
                try:
                    await client.call_tool("slow", {"tag": tag, "seconds": 30, "progress": False})
                    failures[tag] = (time.monotonic(), None)
                except Exception as error:
                    failures[tag] = (time.monotonic(), error)

            async with anyio.create_task_group() as tg:
                for tag in tags:
                    tg.start_soon(call, tag)
                with anyio.fail_after(10):
                    while not all(f"start {t}" in records(record) for t in tags):
                        await anyio.sleep(0.01)
                killed = time.monotonic()
                os.kill(pid, signal.SIGKILL)
            for tag in tags:
                when, exc = failures[tag]
                assert isinstance(exc, ConnectionClosedError), (tag, exc)
                text = str(exc)
                assert "exited" in text or "closed" in text, text
                worst = max(worst, when - killed)
            assert worst < 0.5, f"pending calls failed {worst:.3f}s after SIGKILL"
            rel.lost(0)
    # and a fresh client against a fresh process works at once
    async with Client(rel_server_argv(), cwd=tmp_path, env=env) as client:
        assert (await client.call_tool("echo", {"nonce": "back"}))["content"][0]["text"] == "back"
    rel.verified(CYCLES * 10 + 1)


# ------------------------------ client gone mid-call (E3)


@pytest.mark.anyio
async def test_client_cancelled_mid_stream_cancels_the_handler_http(
    rel: Rel, http_cli: ServerProcess
) -> None:
    baseline = fd_count(http_cli.pid)
    async with Client(http_cli.url, timeout=60) as client:
        tag = uuid.uuid4().hex[:12]
        with anyio.move_on_after(0.6):
            await client.call_tool(
                "slow", {"tag": tag, "seconds": 30}, on_progress=lambda _: None
            )  # SSE stream with progress
        gone = time.monotonic()
        with anyio.fail_after(2):
            while f"cleanup {tag}" not in http_cli.records():
                await anyio.sleep(0.01)
        assert f"cancel {tag}" in http_cli.records()
        assert time.monotonic() - gone < 1.0
        assert (await client.call_tool("echo", {"nonce": "next"}))["content"][0]["text"] == "next"
    assert poll(lambda: fd_count(http_cli.pid) <= baseline + 1, 5), (
        f"server fds {fd_count(http_cli.pid)} vs baseline {baseline}"
    )
    assert "Traceback" not in http_cli.log_text()
    rel.verified()


@pytest.mark.anyio
async def test_client_cancelled_mid_call_cancels_the_handler_stdio(
    rel: Rel, tmp_path: Path
) -> None:
    record = tmp_path / "record.txt"
    record.touch()
    env = {"MCPKIT_SEALING_KEYS": "k", "MCPKIT_REL_RECORD": str(record)}
    async with Client(rel_server_argv(), cwd=tmp_path, env=env, timeout=60) as client:
        tag = uuid.uuid4().hex[:12]
        with anyio.move_on_after(0.5):
            await client.call_tool("slow", {"tag": tag, "seconds": 30})
        gone = time.monotonic()
        with anyio.fail_after(2):
            while f"cleanup {tag}" not in records(record):
                await anyio.sleep(0.01)
        assert f"cancel {tag}" in records(record) and time.monotonic() - gone < 1.0
        assert (await client.call_tool("echo", {"nonce": "next"}))["content"][0]["text"] == "next"
    rel.verified()


# ------------------------------ SIGTERM, 100 in flight (L6)


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), 0.2):
            return False
    except OSError:
        return True


@pytest.mark.anyio
@pytest.mark.slow
async def test_l6_sigterm_with_100_calls_in_flight(rel: Rel, tmp_path: Path) -> None:
    server = ServerProcess.cli(tmp_path)
    try:
        tags = [f"t{i}-{uuid.uuid4().hex[:6]}" for i in range(100)]
        replies: dict[str, Any] = {}
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:

            async def call(tag: str) -> None:
                message = call_tool(
                    next_id(), "slow", {"tag": tag, "seconds": 2, "progress": False}
                )
                try:
                    response = await client.post(
                        server.url, json=message, headers=modern_headers(message)
                    )
                    replies[tag] = (response.status_code, response.json())
                except Exception as exc:
                    replies[tag] = (0, repr(exc))

            async with anyio.create_task_group() as tg:
                for tag in tags:
                    tg.start_soon(call, tag)
                with anyio.fail_after(15):
                    while not all(f"start {t}" in server.records() for t in tags):
                        await anyio.sleep(0.02)
                signalled = time.monotonic()
                server.signal(signal.SIGTERM)
                refused_at = None
                while time.monotonic() - signalled < 1.5:
                    if _refused(server.port):
                        refused_at = time.monotonic()
                        break
                    await anyio.sleep(0.02)
                assert refused_at is not None, "new connections still accepted 1.5s after SIGTERM"
        code = await anyio.to_thread.run_sync(server.wait_exit, 13)
        lost = [t for t in tags if replies.get(t, (0,))[0] != 200]
        wrong = [
            t
            for t in tags
            if t not in lost and replies[t][1]["result"]["content"][0]["text"] != f"done {t}"
        ]
        rel.lost(len(lost))
        rel.misrouted(len(wrong))
        rel.verified(len(tags) - len(lost))
        assert not lost, {t: replies.get(t) for t in lost[:5]}
        assert not wrong
        # uvicorn re-raises the signal after draining (exit status 143); exit code 0 is
        # checked separately (test_l6_sigterm_exit_code_is_zero, a known bug)
        assert code in (0, -signal.SIGTERM), (code, server.log_text()[-2000:])
        assert time.monotonic() - signalled < 11, "exit took longer than the drain deadline + 1s"
        assert "Traceback" not in server.log_text()
    finally:
        server.kill()


def test_l6_sigterm_exit_code_is_zero(rel: Rel, tmp_path: Path) -> None:
    server = ServerProcess.cli(tmp_path)
    try:
        server.signal(signal.SIGTERM)
        assert server.wait_exit(11) == 0
    finally:
        server.kill()


@pytest.mark.anyio
@pytest.mark.slow
async def test_l6_sigterm_ends_open_listen_streams_cleanly(rel: Rel, tmp_path: Path) -> None:
    server = ServerProcess.cli(tmp_path)
    try:
        endings: list[Any] = []
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            opened = 0

            async def listen(i: int) -> None:
                nonlocal opened
                message = modern_request(
                    f"listen-{i}",
                    "subscriptions/listen",
                    {"notifications": {"toolsListChanged": True}},
                )
                text = ""
                try:
                    async with client.stream(
                        "POST", server.url, json=message, headers=modern_headers(message)
                    ) as stream:
                        opened += 1
                        async for chunk in stream.aiter_text():
                            text += chunk
                except Exception as exc:
                    text += f"\n<<{type(exc).__name__}>>"
                messages = sse_json(text.split("\n<<")[0]) if text else []
                endings.append((i, messages[-1] if messages else None, time.monotonic()))

            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(listen, i)
                with anyio.fail_after(10):
                    while opened < 50:
                        await anyio.sleep(0.02)
                await anyio.sleep(0.3)
                signalled = time.monotonic()
                server.signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(server.wait_exit, 13)
        clean = [
            e
            for e in endings
            if e[1] is not None and e[1].get("id") == f"listen-{e[0]}" and "result" in e[1]
        ]
        assert len(clean) == 50, f"{len(clean)} of 50 listen streams got their final result"
        assert max(e[2] for e in endings) - signalled < 3
        assert code in (0, -signal.SIGTERM)
    finally:
        server.kill()


# ------------------------------ Redis restart


def _services() -> Any:
    path = ROOT / "tests" / "scaleout" / "services.py"
    spec = importlib.util.spec_from_file_location("scaleout_services_for_reliability", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while executing it
    spec.loader.exec_module(module)
    return module


TASKS = "io.modelcontextprotocol/tasks"


def _call(
    client: httpx.Client,
    url: str,
    method: str,
    params: dict[str, Any],
    caps: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    message = modern_request(next_id(), method, params, capabilities=caps)
    response = client.post(url, json=message, headers=modern_headers(message))
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        body = [m for m in sse_json(text) if "id" in m][-1]
    else:
        body = json.loads(text)
    assert body.get("id") == message["id"], body
    return response.status_code, body


@pytest.fixture(scope="module")
def redis_outage(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One Redis crash-and-restart under a running replica; the tests below check
    different parts of what was observed (the scenario runs once)."""
    if shutil.which("redis-server") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is required in CI")
        pytest.skip("redis-server is not installed")
    tmp_path = tmp_path_factory.mktemp("redis-outage")
    services = _services()
    port = free_port()
    data = tmp_path / "redis-data"
    data.mkdir()
    url = f"redis://127.0.0.1:{port}/0"
    caps: dict[str, Any] = {"extensions": {TASKS: {}}}
    seen: dict[str, Any] = {"outage": [], "stateless_during": None}
    with contextlib.ExitStack() as stack:
        redis_proc = stack.enter_context(persistent_redis(data, port))
        replica = services.start_replica(url, tmp_path, MCPKIT_TASK_LEASE_S="10")
        stack.callback(replica.kill)
        client = stack.enter_context(httpx.Client(timeout=20))

        def task(seconds: float, label: str) -> str | None:
            status, body = _call(
                client,
                replica.url,
                "tools/call",
                {"name": "slow_compute", "arguments": {"seconds": seconds, "label": label}},
                caps,
            )
            if status != 200 or body.get("result", {}).get("resultType") != "task":
                return None
            return str(body["result"]["taskId"])

        before = task(0.1, "before")
        assert before is not None
        seen["before_completed"] = poll(
            lambda: _status(client, replica.url, before, caps) == "completed", 10
        )
        during = task(1.5, "during")  # finishes while Redis is down
        after = task(4.0, "after")  # finishes after Redis is back
        assert during is not None and after is not None

        services.stop(redis_proc, signal.SIGKILL)  # a crash; appendfsync always keeps the data
        down = time.monotonic()
        for _ in range(3):
            seen["outage"].append(_call(client, replica.url, "tasks/get", {"taskId": before}, caps))
        seen["stateless_during"] = _call(
            client, replica.url, "tools/call", {"name": "greet", "arguments": {"name": "outage"}}
        )
        seen["alive_during"] = replica.proc.poll() is None
        time.sleep(max(0.0, 2.5 - (time.monotonic() - down)))

        stack.enter_context(persistent_redis(data, port))
        finals: dict[str, Any] = {}
        for label, task_id in (("before", before), ("during", during), ("after", after)):

            def settled(t: str = task_id) -> bool:
                return _status(client, replica.url, t, caps) in ("completed", "failed", "cancelled")

            poll(settled, 20, interval=0.2)
            _, body = _call(client, replica.url, "tasks/get", {"taskId": task_id}, caps)
            finals[label] = body.get("result", body)
        seen["finals"] = finals
        fresh = task(0.1, "fresh")
        seen["fresh_completed"] = fresh is not None and poll(
            lambda: _status(client, replica.url, fresh, caps) == "completed", 10
        )
        seen["stateless_after"] = _call(
            client, replica.url, "tools/call", {"name": "greet", "arguments": {"name": "back"}}
        )
        seen["alive_after"] = replica.proc.poll() is None
        seen["log"] = replica.tail(80)
    return seen


@pytest.mark.slow
def test_redis_down_requests_fail_cleanly_and_succeed_after(
    rel: Rel, redis_outage: dict[str, Any]
) -> None:
    seen = redis_outage
    assert seen["before_completed"]
    for status, body in seen["outage"]:  # the state store's own code and 503
        assert status == 503 and body["error"]["code"] == -31050, (status, body)
        assert body["error"]["data"] == {"stateStore": "redis"}, body
    status, body = seen["stateless_during"]
    assert status == 200 and body["result"]["content"][0]["text"] == "Hello, outage!"
    assert seen["alive_during"] and seen["alive_after"]
    status, body = seen["stateless_after"]
    assert status == 200 and body["result"]["content"][0]["text"] == "Hello, back!"
    # data written before the crash survives the restart
    before = seen["finals"]["before"]
    assert before["status"] == "completed" and "before" in before["result"]["content"][0]["text"]
    # and a task started after the restart runs to completion
    assert seen["fresh_completed"], seen["log"][-3000:]
    rel.verified(len(seen["outage"]) + 4)


@pytest.mark.slow
def test_redis_restart_loses_no_task(rel: Rel, redis_outage: dict[str, Any]) -> None:
    finals = redis_outage["finals"]
    lost = [label for label, r in finals.items() if r.get("status") != "completed"]
    rel.lost(len(lost))
    assert not lost, json.dumps(finals, indent=1)[:3000]
    assert "during" in finals["during"]["result"]["content"][0]["text"]
    assert "after" in finals["after"]["result"]["content"][0]["text"]


def _status(client: httpx.Client, url: str, task_id: str, caps: dict[str, Any]) -> str | None:
    try:
        status, body = _call(client, url, "tasks/get", {"taskId": task_id}, caps)
    except (httpx.HTTPError, ValueError):
        return None
    if status != 200 or "result" not in body:
        return None
    return str(body["result"]["status"])


# ------------------------------ L12 network faults (a hand-made TCP proxy)


class FaultyProxy:
    """A TCP proxy on 127.0.0.1 in front of ``port``: delays what the server sends by
    ``delay`` seconds per chunk and, when ``reset_on`` is set, resets (RST) the first
    connection whose server->client bytes contain it."""

    def __init__(self, port: int, *, delay: float = 0.0, reset_on: bytes | None = None) -> None:
        self.port = port
        self.delay = delay
        self.reset_on = reset_on
        self.resets = 0
        self.listen_port = 0

    async def serve(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        self.listen_port = listener.extra(SocketAttribute.local_port)
        task_status.started()
        await listener.serve(self._handle)

    async def _handle(self, client: Any) -> None:
        upstream = await anyio.connect_tcp("127.0.0.1", self.port)
        async with client, upstream, anyio.create_task_group() as tg:

            async def up() -> None:
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    while True:
                        await upstream.send(await client.receive())

            async def down() -> None:
                seen = b""
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    while True:
                        chunk = await upstream.receive()
                        if self.delay:
                            await anyio.sleep(self.delay)
                        await client.send(chunk)
                        seen = (seen + chunk)[-4096:]
                        if self._should_reset(seen):
                            self.resets += 1
                            raw = client.extra(SocketAttribute.raw_socket)
                            # linger 0: close() sends a RST, like a dropped NAT entry
                            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_ZERO)
                            break
                tg.cancel_scope.cancel()

            tg.start_soon(up)
            tg.start_soon(down)

    def _should_reset(self, seen: bytes) -> bool:
        return self.reset_on is not None and self.resets == 0 and self.reset_on in seen


LINGER_ZERO = b"\x01\x00\x00\x00\x00\x00\x00\x00"


@pytest.mark.anyio
async def test_l12_connection_reset_mid_sse_surfaces_or_retries_within_the_timeout(
    rel: Rel, http_cli: ServerProcess
) -> None:
    proxy = FaultyProxy(http_cli.port, reset_on=b"notifications/progress")
    async with anyio.create_task_group() as tg:
        await tg.start(proxy.serve)
        url = f"http://127.0.0.1:{proxy.listen_port}/mcp"
        async with Client(url, timeout=10) as client:
            tag = uuid.uuid4().hex[:12]
            started = time.monotonic()
            outcome: Any
            try:
                outcome = await client.call_tool(
                    "slow", {"tag": tag, "seconds": 1.0}, on_progress=lambda _: None
                )
            except ClientError as exc:
                outcome = exc
            elapsed = time.monotonic() - started
            assert proxy.resets == 1
            assert elapsed < 10, f"{elapsed:.1f}s: the reset went unnoticed until the timeout"
            if not isinstance(outcome, ClientError):
                assert outcome["content"][0]["text"] == f"done {tag}"  # re-issued, new id
            # the server saw the first stream die and cancelled its handler
            assert poll(lambda: f"cancel {tag}" in http_cli.records(), 2)
            again = await client.call_tool("echo", {"nonce": "after-reset"})
            assert again["content"][0]["text"] == "after-reset"
        tg.cancel_scope.cancel()
    rel.verified(2)


@pytest.mark.anyio
async def test_l12_slow_network_500ms_per_chunk_still_answers(
    rel: Rel, http_cli: ServerProcess
) -> None:
    proxy = FaultyProxy(http_cli.port, delay=0.5)
    async with anyio.create_task_group() as tg:
        await tg.start(proxy.serve)
        url = f"http://127.0.0.1:{proxy.listen_port}/mcp"
        async with Client(url, timeout=10) as client:
            started = time.monotonic()
            result = await client.call_tool("echo", {"nonce": "slow-net"})
            assert result["content"][0]["text"] == "slow-net"
            assert time.monotonic() - started >= 0.5
        tg.cancel_scope.cancel()
    rel.verified()
