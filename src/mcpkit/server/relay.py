"""Change events across replicas: the server's bus <-> the backend's pub/sub.

A list_changed caused on replica B must reach a listen stream held by replica A.  Every
event published locally is also published on the backend channel (tagged with this
process's id); a background subscriber republishes events from other processes locally
(with ``relay=False`` so they do not bounce back).
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING

import anyio

from ..runtime.changes import ChangeEvent
from ..state.base import StateBackend, StateUnavailable
from ..types.codec import DecodeError, decode, encode

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from .server import Server

CHANNEL = "changes"
#: The subscription is retried after this pause, doubled each time up to RETRY_MAX_S (a
#: store that is back is heard from again within RETRY_MAX_S).
RETRY_FIRST_S = 0.5
RETRY_MAX_S = 5.0
log = logging.getLogger("mcpkit.relay")


async def start_relay(server: Server, backend: StateBackend, tg: TaskGroup) -> None:
    origin = secrets.token_hex(8)
    outbox_send, outbox_recv = anyio.create_memory_object_stream[bytes](1024)

    def forward(event: ChangeEvent) -> None:
        try:
            outbox_send.send_nowait(encode({"o": origin, "e": event.to_dict()}))
        except anyio.WouldBlock:
            log.warning("change relay is backed up; dropping an event")

    async def publisher() -> None:
        async for data in outbox_recv:
            try:
                await backend.publish(CHANNEL, data)
            except StateUnavailable:
                pass  # the store's watch logged the outage; other replicas re-list later
            except Exception:
                log.exception("could not publish a change event")

    ready = anyio.Event()

    async def subscriber() -> None:
        pause = RETRY_FIRST_S
        while True:
            try:
                async with backend.subscribe(CHANNEL) as messages:
                    ready.set()
                    pause = RETRY_FIRST_S
                    async for data in messages:
                        relay_in(data)
            except StateUnavailable:
                pass  # an expected outage: the store's watch logged it once
            except Exception:
                log.exception("change relay subscription failed; retrying in %.0f s", pause)
            ready.set()
            await anyio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX_S)

    def relay_in(data: bytes) -> None:
        try:
            message = decode(data)
        except DecodeError:
            return
        if isinstance(message, dict) and message.get("o") != origin:
            server.bus.publish(ChangeEvent.from_dict(message["e"]), relay=False)

    server.bus.add_relay(forward)
    tg.start_soon(publisher)
    tg.start_soon(subscriber)
    with anyio.move_on_after(5):
        await ready.wait()
