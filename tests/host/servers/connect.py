"""Test server "connect": a URL elicitation the server completes when its page is visited.

``connect_account()`` sends the person to ``$CONNECT_PAGE/connect/<elicitationId>`` (a
sign-in page served by the test, which leaves ``visited-<id>`` in ``$HOST_TEST_DIR`` when
opened); once the page has been visited the server completes the elicitation (on
2025-11-25 the client gets ``notifications/elicitation/complete``) and answers
``connected``.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from mcpkit import Context, Server
from mcpkit.transports.stdio import run_stdio

server = Server("connect", "1.0.0")


def page_visited(elicitation_id: str) -> bool:
    return (Path(os.environ["HOST_TEST_DIR"]) / f"visited-{elicitation_id}").exists()


@server.tool
async def connect_account(ctx: Context) -> str:
    """Connect your account at the sign-in page."""
    page = os.environ["CONNECT_PAGE"]
    handle = await ctx.elicit_url("Connect your account", lambda eid: f"{page}/connect/{eid}")
    if not handle.accepted:
        return f"not connected ({handle.action})"
    with anyio.fail_after(60):
        while not page_visited(handle.elicitation_id):
            await anyio.sleep(0.05)
    await handle.complete()
    return "connected"


if __name__ == "__main__":
    run_stdio(server)
