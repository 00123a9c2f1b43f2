"""URL elicitation end to end, both eras: ``ctx.elicit_url`` and its completion handle,
``UrlElicitationRequired`` (``-32042`` on 2025-11-25, an input round on 2026-07-28), and
the client's ``url_elicitation`` callback, completion wait and one retry.

The "user" is the client's callback: it visits the page, which here means the test does
what the page's own route would do on the server (record the completion).  In memory
(the stdio code path) on both backends, and once over legacy Streamable HTTP, where a
completion sent after the call was answered must travel on the session's GET stream.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mcpkit import Context, Server
from mcpkit.client import (
    Client,
    ElicitResult,
    Notification,
    ServerError,
    UrlElicitationRequiredError,
)
from mcpkit.server.url_elicitation import (
    UrlElicitation,
    UrlElicitationRequired,
    complete_url_elicitation,
)
from mcpkit.transports.http.app import McpHttpApp
from mcpkit.types.versions import EraChoice
from support.servers import ThreadServer

pytestmark = pytest.mark.anyio

PAGE = "https://accounts.example.test/connect"


def page_for(elicitation_id: str) -> str:
    return f"{PAGE}?e={elicitation_id}"


def id_in(url: str) -> str:
    return parse_qs(urlsplit(url).query)["e"][0]


class Accounts:
    """The server's side: a tool that needs an account connected, and what the page does."""

    def __init__(self) -> None:
        self.server = Server("accounts")
        self.connected: set[str] = set()
        self.pending: dict[str, UrlElicitation] = {}
        server = self.server

        @server.tool
        async def sign_in(ctx: Context) -> str:
            """Send the user to the page and wait for it to report back."""
            handle = await ctx.elicit_url("Sign in to Example", page_for)
            if not handle.accepted:
                return f"{handle.action}"
            if ctx.era == "modern":  # the retried round tells
                return f"accept completed={handle.completed}"
            done = await handle.wait(timeout=30)
            return f"accept completed={done}"

        @server.tool
        async def whoami(ctx: Context) -> str:
            """Needs a connected account; otherwise the call needs a URL elicitation."""
            if "ada" in self.connected:
                return "ada"
            handle = ctx.url_elicitation("Connect your Example account", page_for)
            self.pending[handle.elicitation_id] = handle
            raise handle.required()

    async def visit(self, url: str) -> None:
        """The user finished at the page: what the page's route does on the server."""
        elicitation_id = id_in(url)
        self.connected.add("ada")
        handle = self.pending.pop(elicitation_id, None)
        if handle is not None:
            await handle.complete()
        else:
            await complete_url_elicitation(self.server.state, elicitation_id)


def user(accounts: Accounts, seen: list[dict[str, Any]], action: str = "accept") -> Any:
    async def on_url(params: dict[str, Any]) -> ElicitResult:
        seen.append(params)
        if action == "accept":
            await accounts.visit(params["url"])
        return {"action": action}  # type: ignore[typeddict-item]

    return on_url


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_elicit_url_returns_a_handle_the_server_completes(era: EraChoice) -> None:
    accounts = Accounts()
    seen: list[dict[str, Any]] = []
    notes: list[Notification] = []
    async with Client(
        accounts.server,
        era=era,
        url_elicitation=user(accounts, seen),
        on_notification=notes.append,
    ) as client:
        result = await client.call_tool("sign_in")
    assert result["content"][0]["text"] == "accept completed=True"
    (asked,) = seen
    assert asked["mode"] == "url" and asked["url"].startswith(PAGE)
    if era == "legacy":  # 2025-11-25: the id and the completion notification
        assert asked["elicitationId"] == id_in(asked["url"])
        completes = [n for n in notes if n.method == "notifications/elicitation/complete"]
        assert [n.params for n in completes] == [{"elicitationId": asked["elicitationId"]}]
    else:  # 2026-07-28: neither exists; the retried round saw the completion
        assert "elicitationId" not in asked
        assert not [n for n in notes if n.method == "notifications/elicitation/complete"]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_url_elicitation_required_is_answered_and_retried(era: EraChoice) -> None:
    accounts = Accounts()
    seen: list[dict[str, Any]] = []
    async with Client(accounts.server, era=era, url_elicitation=user(accounts, seen)) as client:
        result = await client.call_tool("whoami")
    assert result["content"][0]["text"] == "ada"
    (asked,) = seen
    assert asked["message"] == "Connect your Example account"
    assert asked["url"].startswith(PAGE)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_client_without_url_elicitation_is_never_sent_one(era: EraChoice) -> None:
    accounts = Accounts()
    async with Client(accounts.server, era=era) as client:
        assert "elicitation" not in client.capabilities
        with pytest.raises(ServerError) as caught:
            await client.call_tool("whoami")
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_without_a_callback_the_error_carries_the_pages() -> None:
    """A server that raises ``-32042`` anyway (built by hand, or another SDK's): the
    client raises it typed, with the pages, instead of a bare server error."""
    server = Server("raw")

    @server.tool
    def whoami() -> str:
        raise UrlElicitationRequired.of("Connect your Example account", page_for)

    async with Client(server, era="legacy") as client:
        with pytest.raises(UrlElicitationRequiredError) as caught:
            await client.call_tool("whoami")
    error = caught.value
    assert error.code == -32042
    assert "no url_elicitation callback" in error.reason
    (page,) = error.elicitations
    assert page["mode"] == "url" and page["url"] == page_for(page["elicitationId"])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_declined_page_is_not_retried() -> None:
    accounts = Accounts()
    seen: list[dict[str, Any]] = []
    async with Client(
        accounts.server, era="legacy", url_elicitation=user(accounts, seen, "decline")
    ) as client:
        assert client.capabilities["elicitation"] == {"url": {}}
        with pytest.raises(UrlElicitationRequiredError, match="the user chose decline"):
            await client.call_tool("whoami")
    assert len(seen) == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_no_completion_in_time_raises() -> None:
    accounts = Accounts()

    async def opens_but_never_finishes(params: dict[str, Any]) -> ElicitResult:
        return {"action": "accept"}

    async with Client(
        accounts.server, era="legacy", url_elicitation=opens_but_never_finishes
    ) as client:
        client.url_completions.timeout = 0.2
        with pytest.raises(UrlElicitationRequiredError, match="no notifications/elicitation"):
            await client.call_tool("whoami")


def test_the_error_matches_the_schema() -> None:
    from support.schema import validate_definition

    error = UrlElicitationRequired.of("Connect", page_for, "el_1")
    message = {"jsonrpc": "2.0", "id": 1, "error": error.to_wire()}
    validate_definition("2025-11-25", "URLElicitationRequiredError", message)
    with pytest.raises(ValueError):
        UrlElicitationRequired([{"mode": "url", "url": PAGE, "message": "m"}])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_legacy_http_completion_after_the_answer_uses_the_get_stream() -> None:
    accounts = Accounts()
    seen: list[dict[str, Any]] = []
    with ThreadServer(McpHttpApp(accounts.server)) as running:
        async with Client(
            running.url, era="legacy", url_elicitation=user(accounts, seen)
        ) as client:
            client.url_completions.timeout = 10
            result = await client.call_tool("whoami")
    assert result["content"][0]["text"] == "ada"
    assert len(seen) == 1
