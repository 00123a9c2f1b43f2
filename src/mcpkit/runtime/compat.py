"""Every use of another library's private API, in one place, pinned to the versions tested.

Today that is one hot-path shortcut: building anyio's asyncio cancel scope class directly
(``anyio.CancelScope()`` looks the backend up on each call, about half of what a scope
costs, paid on every HTTP request that needs one) and asking asyncio whether a loop runs
without raising (``asyncio._get_running_loop``).  Both are checked against the anyio major
version this was tested with (4.x, 4.4 to 4.16); any other version takes the public path,
so an anyio upgrade can make mcpkit slower, never wrong.  A test (tests/transports)
checks that the shortcut builds the very class the public call returns.
"""

from __future__ import annotations

import asyncio
import importlib.metadata

import anyio

__all__ = ["new_cancel_scope"]

#: anyio major versions whose asyncio backend this shortcut was tested with.
TESTED_ANYIO_MAJOR = 4


def _anyio_major() -> int | None:
    try:
        return int(importlib.metadata.version("anyio").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


_SHORTCUT = _anyio_major() == TESTED_ANYIO_MAJOR
_asyncio_scope: type[anyio.CancelScope] | None = None


def new_cancel_scope() -> anyio.CancelScope:
    """A new (not yet entered) ``anyio.CancelScope``: on asyncio (with a tested anyio) the
    backend's own class, looked up once; anywhere else the plain ``anyio.CancelScope()``."""
    global _asyncio_scope
    if not _SHORTCUT or asyncio._get_running_loop() is None:
        return anyio.CancelScope()
    cls = _asyncio_scope
    if cls is None:
        scope = anyio.CancelScope()
        if type(scope).__module__ == "anyio._backends._asyncio":
            _asyncio_scope = type(scope)
        return scope
    return cls()
