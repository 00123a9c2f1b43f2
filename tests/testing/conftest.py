"""``mcpkit.testing`` tests: asyncio only (the HTTP case runs uvicorn in the test's loop;
the stdio case spawns a process); the memory transport's trio runs are in tests/client."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
