"""Host tests run real server processes and sockets: asyncio only.  The browser tests share
one Chromium per module (``hostkit.chromium``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hostkit import chromium


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chromium for the module's pages, on a fresh profile."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context
