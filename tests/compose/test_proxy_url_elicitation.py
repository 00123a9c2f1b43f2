"""URL elicitation through ``proxy(...)`` in every pairing of eras: an upstream in its own
process (``servers/accounts.py``, one era only) that asks the user to connect an account at
a page, with ``ctx.elicit_url`` (a URL-mode ``elicitation/create``) or by failing the call
with the URL elicitation required (``-32042`` on 2025-11-25, an ``input_required`` round
on 2026-07-28).  The front client sees a URL elicitation in its own era (a request on
2025-11-25, an input round on 2026-07-28), its user "visits" the page, and the call
succeeds; a 2025-11-25 front is also told, with ``notifications/elicitation/complete``
for the id it was asked with, that the elicitation completed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mcpkit import Server
from mcpkit.client import Client, ElicitResult, Notification
from mcpkit.compose import proxy
from mcpkit.transports.http import McpHttpApp
from mcpkit.types.versions import EraChoice
from support.mcp import first_text
from support.servers import ThreadServer, http_subprocess

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).parent / "servers" / "accounts.py"
PAGE = "https://accounts.example.test/connect"
ONLY = {"legacy": "--no-modern", "modern": "--no-legacy"}
COMPLETE = "notifications/elicitation/complete"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # subprocesses


class Upstream:
    def __init__(self, url: str, folder: Path) -> None:
        self.url = url
        self.folder = folder


@pytest.fixture(params=["legacy", "modern"], ids=lambda era: f"{era}-upstream")
def upstream(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Upstream]:
    with http_subprocess(tmp_path, UPSTREAM, ONLY[request.param], "--state", "memory:") as up:
        yield Upstream(up.url, tmp_path)


class User:
    """The front client's user: opens each page (writes what the page records in the
    upstream's folder) and accepts."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, params: dict[str, Any]) -> ElicitResult:
        self.asked.append(params)
        url = str(params["url"])
        assert url.startswith(PAGE), url
        (elicitation_id,) = parse_qs(urlsplit(url).query)["e"]
        (self.upstream.folder / f"visited-{elicitation_id}").touch()
        (self.upstream.folder / "connected").touch()
        return {"action": "accept"}


@pytest.mark.parametrize("front_era", ["legacy", "modern"], ids=lambda era: f"{era}-front")
@pytest.mark.parametrize(("tool", "answer"), [("whoami", "ada"), ("connect_account", "connected")])
async def test_a_url_elicitation_reaches_the_front_in_its_era(
    upstream: Upstream, front_era: EraChoice, tool: str, answer: str
) -> None:
    await connect_through(proxy(upstream.url), upstream, front_era, tool, answer)


@pytest.mark.parametrize("front_era", ["legacy", "modern"], ids=lambda era: f"{era}-front")
async def test_a_proxy_served_over_http_relays_url_elicitation(
    upstream: Upstream, front_era: EraChoice
) -> None:
    """The proxy served over Streamable HTTP: the URL-mode request and the completion
    travel on the front call's event stream."""
    with ThreadServer(McpHttpApp(proxy(upstream.url))) as served:
        await connect_through(served.url, upstream, front_era, "whoami", "ada")


async def connect_through(
    front: Server | str, upstream: Upstream, front_era: EraChoice, tool: str, answer: str
) -> None:
    """``tool`` called through the proxy ``front`` by a client of ``front_era`` whose
    user visits the page it is sent to: its answer, the one page the user saw, and the
    completion a legacy front is told of."""
    user = User(upstream)
    notes: list[Notification] = []
    async with Client(
        front, era=front_era, url_elicitation=user, on_notification=notes.append
    ) as client:
        client.url_completions.timeout = 30  # (a failure here, not a hang)
        result = await client.call_tool(tool)
        assert first_text(result) == answer
        (asked,) = user.asked
        assert asked["mode"] == "url" and asked["message"] == "Connect your Example account"
        completions = [n.params for n in notes if n.method == COMPLETE]
        if front_era == "legacy":
            assert completions == [{"elicitationId": asked["elicitationId"]}]
        else:
            assert "elicitationId" not in asked and completions == []
