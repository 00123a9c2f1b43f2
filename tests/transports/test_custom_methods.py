"""An extension's custom methods over real transports: ``examples/notes_extension.py`` run
by ``mcpkit serve`` on real pipes (stdio) and a real socket (Streamable HTTP), each in
both eras, called by mcpkit's client; and the 2026-07-28 HTTP header rules for a custom
method checked with raw requests (``Mcp-Method`` must name it; an unregistered one is
404 with -32601, as any unknown method)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.client import Client
from support.httpclient import McpHttp, expect_error
from support.mcp import modern_headers, modern_request
from support.servers import ProcessServer, http_subprocess, serve_argv

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notes_extension.py"
ERAS = ["modern", "legacy"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessServer]:
    with http_subprocess(tmp_path_factory.mktemp("notes-http"), EXAMPLE) as running:
        yield running


async def exercise(client: Client, tag: str) -> None:
    """Add a note, receive the server's notification, search, then clear by notification."""
    added: list[dict[str, Any]] = []
    arrived = anyio.Event()

    def on_added(params: dict[str, Any]) -> None:
        added.append(params)
        arrived.set()

    client.on_notification("com.example/notes/added", on_added)
    declared = client.server_info.capabilities.get("extensions")
    if client.era == "modern":  # 2025-11-25 has no extensions capability
        assert declared == {"com.example/notes": {"maxNotes": 100}}
    else:
        assert declared is None
    note = await client.request("com.example/notes/add", {"text": "figs", "tags": [tag]})
    assert note["text"] == "figs" and note["tags"] == [tag]
    with anyio.fail_after(10):
        await arrived.wait()
    assert added == [{"id": note["id"]}]
    found = await client.request("com.example/notes/search", {"tag": tag})
    assert [n["text"] for n in found["notes"]] == ["figs"]
    await client.notify("com.example/notes/clear")
    with anyio.fail_after(10):  # a notification is not answered: ask until it took effect
        while (await client.request("com.example/notes/search", {"tag": tag}))["notes"]:
            await anyio.sleep(0.05)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_custom_methods_over_stdio(era: str, tmp_path: Path) -> None:
    async with Client(serve_argv(EXAMPLE), era=era, cwd=tmp_path) as client:  # type: ignore[arg-type]
        assert client.era == era
        await exercise(client, f"stdio-{era}")


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_custom_methods_over_http(era: str, served: ProcessServer) -> None:
    async with Client(served.url, era=era) as client:  # type: ignore[arg-type]
        assert client.era == era
        await exercise(client, f"http-{era}")


def test_http_header_rules_hold_for_custom_methods(served: ProcessServer) -> None:
    http = McpHttp(served.url, served.alive)
    try:
        message = modern_request(1, "com.example/notes/search", {"tag": "none"})
        ok = http.post_json(message, modern_headers(message))
        assert ok.status_code == 200, ok.text
        wrong = http.post_json(message, modern_headers(message, Mcp_Method="com.example/notes/add"))
        expect_error(wrong, 400, -32020, request_id=1)
        missing = http.post_json(message, modern_headers(message, Mcp_Method=None))
        expect_error(missing, 400, -32020, request_id=1)
        unknown = modern_request(2, "com.example/notes/unknown", {})
        expect_error(http.post_json(unknown, modern_headers(unknown)), 404, -32601, request_id=2)
        http.assert_healthy()
    finally:
        http.close()
