"""``StdioServer.serve`` on real pipe descriptors in this process, on asyncio (the pipe
endpoint reads and writes them on the loop) and on trio (a worker thread per read and
write): the same answers, a reply larger than the pipe's buffer arriving whole, and
the server ending at EOF on its input."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpkit import Server
from mcpkit.transports.stdio import StdioServer
from support.mcp import modern_request

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])]

server = Server("fds")


@server.tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


class Pipes:
    """The client's side of the server's two pipes."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd = write_fd
        self.read_fd = read_fd
        self.buffer = b""

    async def send(self, *messages: dict[str, Any]) -> None:
        """Write without blocking the loop (the server may be reading in it)."""
        view = memoryview(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        while view:
            await anyio.wait_writable(self.write_fd)
            view = view[os.write(self.write_fd, view) :]

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.read_fd)
            chunk = os.read(self.read_fd, 1 << 16)
            assert chunk, "the server closed its output"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[Pipes, anyio.Event]]:
    """The server on fresh pipes; closing its input (EOF) must end it."""
    server_in, client_out = os.pipe()
    os.set_blocking(client_out, False)
    client_in, server_out = os.pipe()
    ended = anyio.Event()

    async def serve() -> None:
        await StdioServer(server).serve(server_in, server_out)
        ended.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            yield Pipes(client_out, client_in), ended
            os.close(client_out)
            client_out = -1
            with anyio.fail_after(10):
                await ended.wait()
    finally:
        for fd in (server_in, server_out, client_in, client_out):
            if fd >= 0:
                os.close(fd)


def call(n: int, text: str) -> dict[str, Any]:
    return modern_request(n, "tools/call", {"name": "echo", "arguments": {"text": text}})


async def test_each_call_is_answered_and_eof_ends_the_server(anyio_backend: str) -> None:
    async with serving() as (pipes, ended):
        await pipes.send(*(call(n, f"call {n}") for n in range(1, 4)))
        answers = [await pipes.receive() for _ in range(3)]  # in any order (trio: tasks)
        texts = {a["id"]: a["result"]["content"][0]["text"] for a in answers}
        assert texts == {1: "call 1", 2: "call 2", 3: "call 3"}
        assert not ended.is_set()
    assert ended.is_set()


async def test_a_reply_larger_than_the_pipe_buffer_arrives_whole(anyio_backend: str) -> None:
    # Sixteen times a Linux pipe's buffer: the pipe transport buffers what does not fit and
    # writes it as the client reads; a worker thread's write blocks until it is all out.
    text = "x" * (1 << 20)
    async with serving() as (pipes, _):
        await pipes.send(call(7, text))
        answer = await pipes.receive()
        assert answer["id"] == 7 and answer["result"]["content"][0]["text"] == text
        await pipes.send(call(8, "after"))
        assert (await pipes.receive())["result"]["content"][0]["text"] == "after"
