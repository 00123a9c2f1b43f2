"""Host tests run real server processes and sockets: asyncio only.  The browser tests share
one Chromium per module (``hostkit.chromium``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hostkit import ARTIFACTS, PAGE_TIMEOUT_MS, SERVER_START_MS, chromium


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chromium for the module's pages, on a fresh profile."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


@pytest.fixture(scope="module")
def probe_page(browser: Any, host_url: str) -> Iterator[Any]:
    """The page of the module's ``host_url`` host, once the probe server's tools are listed
    (for the modules whose host runs ``servers/probe.py``)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(host_url)
    # The first page of a module waits for its server's process to start and list its
    # tools: on a loaded machine that takes longer than a page action.
    page.wait_for_selector("[data-testid='tool:probe:show_probe']", timeout=SERVER_START_MS)
    yield page
    page.close()
