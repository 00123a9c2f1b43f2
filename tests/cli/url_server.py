"""A stdio fixture whose tool needs the user to visit a page first (``-32042`` on
2025-11-25): the page is simulated by the server itself, which records the completion a
moment after the call was refused, as a sign-in page's callback route would."""

from __future__ import annotations

import anyio

from mcpkit import Context, Server
from mcpkit.server.url_elicitation import UrlElicitation

server = Server("url-fixture")
connected: list[str] = []


async def page_visited(handle: UrlElicitation) -> None:
    await anyio.sleep(0.3)
    connected.append("ada")
    await handle.complete()


@server.tool
async def account(ctx: Context) -> str:
    """The connected account, once the user has connected it."""
    if connected:
        return f"connected: {connected[0]}"
    handle = ctx.url_elicitation(
        "Connect your Example account", lambda eid: f"https://example.test/connect?e={eid}"
    )
    server.spawn(lambda: page_visited(handle))
    raise handle.required()


if __name__ == "__main__":
    server.run()
