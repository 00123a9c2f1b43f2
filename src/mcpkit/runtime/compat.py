"""Every use of another library's private API, in one place, pinned to the versions tested.

Today that is one hot-path shortcut: building anyio's asyncio cancel scope class directly
(``anyio.CancelScope()`` looks the backend up on each call, about half of what a scope
costs, paid on every HTTP request that needs one) and asking asyncio whether a loop runs
without raising (``asyncio._get_running_loop``).  The anyio major version it was tested
with (4.x, 4.4 to 4.16) is pinned where versions belong, in pyproject's dependencies
(``anyio>=4.4,<5``), not read at import time (``importlib.metadata`` cost a Lambda cold
start ~10 ms); and the class is taken only when the public call returned the asyncio
backend's own, so even a broken pin makes mcpkit slower, never wrong.  A test
(tests/transports) checks that the shortcut builds the very class the public call returns
and that the pin admits the installed anyio.
"""

from __future__ import annotations

import asyncio

import anyio

__all__ = ["new_cancel_scope"]

#: anyio major version whose asyncio backend this shortcut was tested with (pyproject pins
#: ``anyio<5``; tests/transports/test_compat.py holds the two together).
TESTED_ANYIO_MAJOR = 4
_asyncio_scope: type[anyio.CancelScope] | None = None


def new_cancel_scope() -> anyio.CancelScope:
    """A new (not yet entered) ``anyio.CancelScope``: on asyncio (with a tested anyio) the
    backend's own class, looked up once; anywhere else the plain ``anyio.CancelScope()``."""
    global _asyncio_scope
    if asyncio._get_running_loop() is None:
        return anyio.CancelScope()
    cls = _asyncio_scope
    if cls is None:
        scope = anyio.CancelScope()
        if type(scope).__module__ == "anyio._backends._asyncio":
            _asyncio_scope = type(scope)
        return scope
    return cls()
