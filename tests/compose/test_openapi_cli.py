"""``mcpkit serve --openapi SPEC --base-url URL`` as a real stdio process in front of a
real HTTP API on 127.0.0.1 (the FastAPI app of test_openapi.py, served by uvicorn)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpkit.client import Client

sys.path.insert(0, str(Path(__file__).parent / "servers"))
shop_api = pytest.importorskip("shop_api")  # needs fastapi (the dev extra)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_serve_openapi_file_over_stdio(tmp_path: Path, shop_url: str) -> None:
    spec = tmp_path / "shop.json"
    spec.write_text(json.dumps(shop_api.app.openapi()))
    command = [
        sys.executable, "-m", "mcpkit", "serve", "--openapi", str(spec), "--base-url", shop_url,
        "--api-header", "X-Api-Key: from-cli", "--state", "memory:",
    ]  # fmt: skip
    async with Client(command) as client:
        names = {t["name"] for t in await client.list_tools()}
        assert {"get_item", "create_item", "echo"} <= names
        item = await client.call_tool("get_item", {"item_id": 2})
        assert item["structuredContent"]["name"] == "yoyo"
        echoed = await client.call_tool("echo", {"x_source": "cli"})
        assert echoed["structuredContent"]["api_key"] == "from-cli"


async def test_serve_openapi_from_a_url(tmp_path: Path, shop_url: str) -> None:
    command = [
        sys.executable, "-m", "mcpkit", "serve", "--openapi", f"{shop_url}/openapi.json",
        "--base-url", shop_url, "--state", "memory:",
    ]  # fmt: skip
    async with Client(command) as client:
        missing = await client.call_tool("get_item", {"item_id": 404})
        assert missing.get("isError") is True and "HTTP 404" in missing["content"][0]["text"]


def test_serve_needs_a_target_or_openapi(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "serve", "--http"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--openapi SPEC" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "serve", "--openapi", "nope.json", "--http"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "cannot serve the OpenAPI document nope.json" in done.stderr
