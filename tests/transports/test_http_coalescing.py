"""Write coalescing of ``mcpkit serve --http``: uvicorn writes a response head and its
body separately; the connection's transport (``_Coalescing``) sends what one loop step
wrote in one system call.  Checked on the wrapper itself (order, close, delegation) and on
a real ``mcpkit serve`` process, whose write system calls are counted in /proc.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from mcpkit import Context, Server
from mcpkit.transports.http import McpHttpApp
from mcpkit.transports.http.server import _Coalescing, protocol_classes
from support.httpclient import McpHttp
from support.mcp import modern_headers, modern_request
from support.servers import ProcessServer, ThreadServer


class RecordingTransport(asyncio.Transport):
    """Records what reaches the real transport, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Any] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.events.append(bytes(data))

    def close(self) -> None:
        self.closed = True
        self.events.append("close")

    def write_eof(self) -> None:
        self.events.append("eof")

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.events.append("pause")

    def resume_reading(self) -> None:
        self.events.append("resume")

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000)}.get(name, default)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.events.append(("limits", high, low))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_writes_of_one_step_leave_in_one_write() -> None:
    async def scenario() -> list[Any]:
        real = RecordingTransport()
        transport = _Coalescing(real)
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(b'{"ok":true}')
        assert real.events == []  # held until the end of this step
        await asyncio.sleep(0)
        transport.write(b"next")  # a later step: its own write
        await asyncio.sleep(0)
        return real.events

    assert run(scenario()) == [b'HTTP/1.1 200 OK\r\n\r\n{"ok":true}', b"next"]


def test_order_holds_for_every_way_of_writing() -> None:
    async def scenario() -> list[Any]:
        real = RecordingTransport()
        transport = _Coalescing(real)
        buffer = bytearray(b"one ")
        transport.write(
            cast(bytes, buffer)
        )  # _Coalescing.write says bytes; writers pass any buffer
        buffer[:] = b"XXX "  # the caller reuses its buffer before the flush
        transport.writelines([b"two ", memoryview(b"three")])
        transport.write_eof()  # sends what is held first
        await asyncio.sleep(0)
        return real.events

    assert run(scenario()) == [b"one two three", "eof"]


def test_close_sends_what_is_held_first_and_nothing_twice() -> None:
    async def scenario() -> list[Any]:
        real = RecordingTransport()
        transport = _Coalescing(real)
        transport.write(b"last words")
        transport.close()
        await asyncio.sleep(0)  # the flush scheduled by the write finds nothing left
        return real.events

    assert run(scenario()) == [b"last words", "close"]


def test_the_rest_of_the_transport_is_the_real_one() -> None:
    async def scenario() -> RecordingTransport:
        real = RecordingTransport()
        transport = _Coalescing(real)
        transport.pause_reading()
        transport.resume_reading()
        transport.set_write_buffer_limits(high=64)  # not wrapped: passed through as it is
        assert transport.get_extra_info("peername") == ("127.0.0.1", 50000)
        assert transport.get_extra_info("socket", "none") == "none"
        assert transport.is_closing() is False
        transport.close()
        assert transport.is_closing() is True
        return real

    assert run(scenario()).events == ["pause", "resume", ("limits", 64, None), "close"]


# ------------------------------------------------------------------ a real server process


def write_syscalls(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    raise AssertionError("no syscw in /proc/PID/io")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts writes in /proc")
def test_a_json_answer_costs_one_write_system_call(server: ProcessServer) -> None:
    calls = 40
    with httpx.Client(timeout=10) as http:  # one keep-alive connection
        message = modern_request(0, "tools/call", {"name": "test_simple_text"})
        assert http.post(server.url, json=message, headers=modern_headers(message)).is_success
        before = write_syscalls(server.process.pid)
        for i in range(1, calls + 1):
            message = modern_request(i, "tools/call", {"name": "test_simple_text"})
            response = http.post(server.url, json=message, headers=modern_headers(message))
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("application/json")
            assert response.json()["id"] == i
        writes = write_syscalls(server.process.pid) - before
    # Head and body apart would be 2 per answer; a stray log line or state write may add a
    # few, never one per request.
    assert writes <= calls * 1.25, f"{writes} write system calls for {calls} answers"


@pytest.mark.parametrize("implementation", ["httptools", "h11"])
def test_json_and_streamed_answers_arrive_whole(implementation: str) -> None:
    """Both guarded protocol classes, on a real socket: a JSON answer, and an SSE answer
    whose head, progress event and result are written in separate steps."""
    classes = protocol_classes()
    if implementation not in classes:
        pytest.skip(f"{implementation} is not installed")
    server = Server("coalescing")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    async def progress_echo(text: str, ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        await asyncio.sleep(0.01)  # the result leaves in a later step than the event
        return text

    with ThreadServer(McpHttpApp(server), http=classes[implementation]) as running:
        client = McpHttp(running.url, running.alive)
        try:
            for i in range(3):  # several answers on one keep-alive connection
                reply = client.modern(
                    "tools/call", {"name": "echo", "arguments": {"text": f"t{i}"}}
                )
                assert reply.response.headers["content-type"].startswith("application/json")
                assert reply.result["content"][0]["text"] == f"t{i}"
            streamed = client.modern(
                "tools/call",
                {"name": "progress_echo", "arguments": {"text": "done"}},
                progressToken="p1",
            )
            assert streamed.response.headers["content-type"].startswith("text/event-stream")
            assert [n["method"] for n in streamed.notifications] == ["notifications/progress"]
            assert streamed.result["content"][0]["text"] == "done"
        finally:
            client.close()
