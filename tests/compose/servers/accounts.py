"""Test upstream "accounts": tools that need the user's Example account connected at a
page outside MCP (a URL elicitation), served in its own process by the proxy tests.

The "page" is the test: visiting ``https://accounts.example.test/connect?e=<id>`` means
writing ``visited-<id>`` in the server's working folder (what a real page's route would
record).  Then the account is connected (``connected`` is written too) and the server
completes that elicitation (2025-11-25: ``notifications/elicitation/complete``).

* ``whoami`` — ``ada`` once connected; before, the call fails with the URL elicitation
  required (``-32042`` on 2025-11-25, an ``input_required`` round on 2026-07-28), and the
  server completes the elicitation when its page is visited;
* ``connect_account`` — ``connected`` at once when it is; else it asks with
  ``ctx.elicit_url`` and waits for the page.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import anyio

from mcpkit import Context, Server
from mcpkit.server.url_elicitation import UrlElicitation

server = Server("accounts", "1.0.0")
PAGE = "https://accounts.example.test/connect"


def page_for(elicitation_id: str) -> str:
    return f"{PAGE}?e={quote(elicitation_id)}"


def connected() -> bool:
    return Path("connected").exists()


async def completed_once_visited(handle: UrlElicitation) -> bool:
    with anyio.move_on_after(60):
        while not Path(f"visited-{handle.elicitation_id}").exists():
            await anyio.sleep(0.05)
        await handle.complete()
        return True
    return False


@server.tool
async def whoami(ctx: Context) -> str:
    """Who the connected account is."""
    if connected():
        return "ada"
    handle = ctx.url_elicitation("Connect your Example account", page_for)

    async def complete_later() -> None:
        await completed_once_visited(handle)

    ctx.server.spawn(complete_later)
    raise handle.required()


@server.tool
async def connect_account(ctx: Context) -> str:
    """Connect the Example account at its page."""
    if connected():
        return "connected"
    handle = await ctx.elicit_url("Connect your Example account", page_for)
    if not handle.accepted:
        return f"not connected ({handle.action})"
    return "connected" if await completed_once_visited(handle) else "not connected (timeout)"
