"""Fixtures shared by the compose tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.servers import ThreadServer

sys.path.insert(0, str(Path(__file__).parent / "servers"))


@pytest.fixture(scope="module")
def shop_url() -> Iterator[str]:
    """The FastAPI shop of ``servers/shop_api.py`` on a real uvicorn, one per module (skips
    without fastapi, which the dev extra brings)."""
    shop_api = pytest.importorskip("shop_api")
    with ThreadServer(shop_api.app) as served:
        yield f"http://127.0.0.1:{served.port}"
