"""Host tests run real server processes and sockets: asyncio only."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
