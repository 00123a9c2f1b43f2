"""Waiting for something another process or thread does: poll a check until it holds.

One loop for the whole suite, so a timeout or a polling interval means the same thing in
every folder.  Timeouts are upper bounds for "it happens", never performance claims.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


def poll(check: Callable[[], T], timeout: float, interval: float = 0.05) -> T:
    """The first truthy value of ``check()`` within ``timeout`` seconds, else its last
    (falsy) one: for a test that records whether something happened in time."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def eventually(
    check: Callable[[], T | None],
    timeout: float = 20.0,
    what: str = "the condition",
    interval: float = 0.05,
) -> T:
    """The first truthy value of ``check()``; fails the test naming ``what`` when none
    comes within ``timeout`` seconds."""
    value = poll(check, timeout, interval)
    assert value, f"not within {timeout}s: {what}"
    return value


class Notices:
    """The params of each notification a handler received (pass the object as a
    ``client.on_notification`` handler), and :meth:`wait_for` one with given fields, on
    the event loop (the test bounds it with ``anyio.fail_after``)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self._arrived = anyio.Event()

    def __call__(self, params: dict[str, Any]) -> None:
        self.seen.append(params)
        self._arrived.set()

    async def wait_for(self, **fields: Any) -> dict[str, Any]:
        """The first notification whose params hold every one of ``fields``."""
        while True:
            for params in self.seen:
                if all(params.get(key) == value for key, value in fields.items()):
                    return params
            self._arrived = anyio.Event()
            await self._arrived.wait()
