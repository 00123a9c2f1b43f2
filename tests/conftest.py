"""Shared fixtures.

``anyio_backend`` runs async tests on asyncio and trio by default (the protocol core and
the server framework are backend-neutral); transport modules that need uvicorn or
subprocess pipes override it with asyncio only.
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend
