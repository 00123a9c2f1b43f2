"""The stdio client's asyncio pipe endpoint: answers settled in the read callback must keep
every rule of the shared endpoint (order with notifications, partial lines, junk, strays,
timeouts with ``notifications/cancelled``, EOF).  Real pipes, a scripted peer."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpkit.runtime.pending import EndpointClosed, RequestTimeout
from mcpkit.transports.stdio_io import PipeEndpoint, open_pipe_writer

pytestmark = pytest.mark.anyio


class Peer:
    """The far side of the pipes: reads our requests, writes whatever bytes a test wants."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.buffer = b""

    def send(self, data: bytes) -> None:
        os.write(self.write_fd, data)

    async def next_message(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.read_fd)
            self.buffer += os.read(self.read_fd, 65536)
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))


def answer(rid: int, text: str = "ok") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"text": text}}).encode() + b"\n"


@asynccontextmanager
async def connected(**handlers: Any) -> AsyncIterator[tuple[PipeEndpoint, Peer]]:
    to_peer_r, to_peer_w = os.pipe()
    from_peer_r, from_peer_w = os.pipe()
    pipe = await open_pipe_writer(to_peer_w)
    endpoint = PipeEndpoint(pipe, **handlers)
    chunks = await endpoint.open_reader(from_peer_r)
    peer = Peer(to_peer_r, from_peer_w)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(endpoint.run, chunks)
            yield endpoint, peer
            tg.cancel_scope.cancel()
    finally:
        pipe.close()
        for fd in (to_peer_r, from_peer_w):
            os.close(fd)


async def test_answers_in_one_chunk_and_split_across_chunks() -> None:
    async with connected() as (endpoint, peer):
        results: dict[int, Any] = {}

        async def call(n: int) -> None:
            results[n] = await endpoint.request("tools/call", {"n": n}, timeout=5)

        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(call, n)
            ids = {(await peer.next_message())["params"]["n"]: None for _ in range(3)}
            assert set(ids) == {0, 1, 2}
            both = answer(1, "a") + answer(2, "b")
            peer.send(both)
            third = answer(3, "c")
            peer.send(third[:10])
            await anyio.sleep(0.05)
            peer.send(third[10:])
        assert sorted(r["text"] for r in results.values()) == ["a", "b", "c"]


async def test_progress_before_the_answer_in_the_same_chunk_is_seen_first() -> None:
    seen: list[str] = []

    def progress(params: dict[str, Any]) -> None:
        seen.append(f"progress {params['progress']}")

    async with connected() as (endpoint, peer), anyio.create_task_group() as tg:

        async def call() -> None:
            params = {"_meta": {"progressToken": "t"}}
            await endpoint.request("tools/call", params, timeout=5, on_progress=progress)
            seen.append("answer")

        tg.start_soon(call)
        rid = (await peer.next_message())["id"]
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1},
        }
        peer.send(json.dumps(note).encode() + b"\n" + answer(rid))
    assert seen == ["progress 1", "answer"]


async def test_an_answer_waits_for_the_notification_handler_before_it() -> None:
    release = anyio.Event()
    handled: list[str] = []

    async def on_notification(message: dict[str, Any], endpoint: Any) -> None:
        await release.wait()
        handled.append(message["method"])

    async with connected(on_notification=on_notification) as (endpoint, peer):
        done = anyio.Event()

        async def call() -> None:
            await endpoint.request("ping", None, timeout=5)
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            rid = (await peer.next_message())["id"]
            peer.send(b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n')
            await anyio.sleep(0.05)
            peer.send(answer(rid))  # a chunk of its own, while the handler still runs
            await anyio.sleep(0.05)
            assert not done.is_set()
            release.set()
        assert handled == ["notifications/message"] and done.is_set()


async def test_junk_and_stray_answers_do_not_stop_the_reader() -> None:
    junk: list[bytes] = []
    strays: list[Any] = []
    async with connected() as (endpoint, peer):
        endpoint.reply_to_invalid = False
        endpoint.on_invalid = lambda line, why: junk.append(line)
        endpoint.on_stray = strays.append
        async with anyio.create_task_group() as tg:
            out: list[Any] = []

            async def call() -> None:
                out.append(await endpoint.request("ping", None, timeout=5))

            tg.start_soon(call)
            rid = (await peer.next_message())["id"]
            peer.send(b"not json\n" + answer(999) + answer(rid, "fine"))
        assert out == [{"text": "fine"}]
        assert junk == [b"not json"] and [s["id"] for s in strays] == [999]


async def test_a_timeout_sends_cancelled_and_a_late_answer_is_stray() -> None:
    async with connected() as (endpoint, peer):
        strays: list[Any] = []
        endpoint.on_stray = strays.append
        with pytest.raises(RequestTimeout):
            await endpoint.request("slow", None, timeout=0.05)
        request = await peer.next_message()
        cancelled = await peer.next_message()
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"]["requestId"] == request["id"]
        peer.send(answer(request["id"]))
        await anyio.sleep(0.05)
        assert [s["id"] for s in strays] == [request["id"]]


async def test_deadlines_of_requests_in_flight_together_are_each_kept() -> None:
    """One timer serves every request's deadline: a short timeout issued after a long one
    must still fire on time, an answered request must not time out, and a long timeout
    still fires after the shorter ones are gone."""
    async with connected() as (endpoint, peer):
        outcomes: dict[str, Any] = {}
        ended: dict[str, float] = {}
        start = anyio.current_time()

        async def call(name: str, timeout: float) -> None:
            try:
                outcomes[name] = await endpoint.request(name, None, timeout=timeout)
            except RequestTimeout:
                outcomes[name] = "timeout"
            ended[name] = anyio.current_time() - start

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "long", 0.6)
                await anyio.sleep(0.01)
                tg.start_soon(call, "short", 0.1)
                tg.start_soon(call, "answered", 0.2)
                ids = {}
                for _ in range(3):
                    message = await peer.next_message()
                    ids[message["method"]] = message["id"]
                peer.send(answer(ids["answered"]))
        assert outcomes == {"answered": {"text": "ok"}, "short": "timeout", "long": "timeout"}
        assert ended["answered"] < 0.1
        assert 0.1 <= ended["short"] < 0.4
        assert 0.6 <= ended["long"] < 1.2


async def test_progress_extends_the_timeout() -> None:
    async with connected() as (endpoint, peer):
        async with anyio.create_task_group() as tg:
            out: list[Any] = []

            async def call() -> None:
                params = {"_meta": {"progressToken": 7}}
                out.append(await endpoint.request("slow", params, timeout=0.2, max_timeout=5))

            tg.start_soon(call)
            rid = (await peer.next_message())["id"]
            for i in range(4):  # 0.4 s in all: past the timeout, kept alive by progress
                await anyio.sleep(0.1)
                note = {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": 7, "progress": i},
                }
                peer.send(json.dumps(note).encode() + b"\n")
            peer.send(answer(rid))
        assert out == [{"text": "ok"}]


async def test_eof_fails_what_is_pending() -> None:
    async with connected() as (endpoint, peer):
        task = asyncio.ensure_future(endpoint.request("ping", None, timeout=5))
        await peer.next_message()
        os.close(peer.write_fd)
        peer.write_fd = os.open(os.devnull, os.O_WRONLY)  # closed again at exit
        with pytest.raises(EndpointClosed, match="closed the stream"):
            await task


async def test_cancelling_the_caller_sends_cancelled() -> None:
    async with connected() as (endpoint, peer):
        task = asyncio.ensure_future(endpoint.request("slow", None))
        request = await peer.next_message()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        cancelled = await peer.next_message()
        assert cancelled["params"] == {"requestId": request["id"]}
