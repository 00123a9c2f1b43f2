"""The direct path's watch for clients going away (``compose/deadlines.py``: ``Watches``).

One timer looks at the calls in flight and gives a watcher (a task reading the request's
``receive``) only to those still waiting after ``WATCH_AFTER_S``: a call that ends sooner
never reads ``receive``; a client that disconnects while a watched call waits cancels it,
and the call can tell that cancellation from any other (``settle``).  Over real HTTP the
same is checked end to end by ``test_gateway_direct.py``
(``test_client_disconnect_cancels_the_upstream_call``).
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

from mcpkit.compose.deadlines import WATCH_AFTER_S, Watches


class Client:
    """An ASGI ``receive`` whose messages the test sends (what uvicorn's is: a queue)."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        self.reads = 0

    async def receive(self) -> MutableMapping[str, Any]:
        self.reads += 1
        return await self.messages.get()


def test_a_call_that_ends_soon_is_never_watched() -> None:
    async def main() -> None:
        watches = Watches()
        client = Client()
        for _ in range(3):
            watch = watches.enter(client.receive)
            await asyncio.sleep(0)
            watches.leave(watch)
            assert not watch.settle()
        await asyncio.sleep(WATCH_AFTER_S * 3)  # (the timer ticks on with nothing to watch)
        assert client.reads == 0

    asyncio.run(main())


def test_a_disconnect_cancels_a_waiting_call() -> None:
    async def main() -> None:
        watches = Watches()
        client = Client()

        async def call() -> str:
            watch = watches.enter(client.receive)
            try:
                try:
                    await asyncio.sleep(60)  # (an upstream that does not answer)
                finally:
                    watches.leave(watch)
            except asyncio.CancelledError:
                if watch.settle():
                    return "the client went away"
                raise
            return "answered"

        task = asyncio.create_task(call())
        while client.reads == 0:  # until the call, waiting, has its watcher
            await asyncio.sleep(WATCH_AFTER_S / 5)
        await client.messages.put({"type": "http.disconnect"})
        assert await task == "the client went away"
        assert not task.cancelled() and task.cancelling() == 0

    asyncio.run(main())


def test_a_cancellation_not_the_watchs_own_is_not_taken() -> None:
    async def main() -> None:
        watches = Watches()
        client = Client()
        settled: list[bool] = []

        async def call() -> None:
            watch = watches.enter(client.receive)
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                settled.append(watch.settle())
                raise
            finally:
                watches.leave(watch)

        task = asyncio.create_task(call())
        while client.reads == 0:
            await asyncio.sleep(WATCH_AFTER_S / 5)
        task.cancel()  # (the gateway stopping, say): not a client going away
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()
        assert settled == [False]
        await client.messages.put({"type": "http.disconnect"})  # the watcher is gone
        await asyncio.sleep(WATCH_AFTER_S)
        assert client.messages.qsize() == 1

    asyncio.run(main())
