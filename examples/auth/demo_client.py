"""Call the protected example server as a user would: OAuth discovery, registration,
authorization (PKCE), token, then a step-up when ``purge`` needs ``mcp:admin``.

The local authorization server approves at once, so the "browser" is the headless handler;
against a real authorization server use ``LoopbackRedirectHandler()`` instead, which opens
the system browser (never through a shell) and listens on 127.0.0.1 for the redirect.

    python examples/auth/demo_client.py http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from mcpkit.auth.client import (
    FileTokenStore,
    HeadlessRedirectHandler,
    OAuthClientAuth,
    UrlPolicy,
)
from mcpkit.client import Client


async def main(url: str) -> None:
    local = UrlPolicy.local_development()  # the demo's servers are on 127.0.0.1
    auth = OAuthClientAuth(
        redirect_handler=HeadlessRedirectHandler("http://127.0.0.1:53682/callback", policy=local),
        client_name="mcpkit demo client",
        store=FileTokenStore(Path(".mcpkit") / "demo-tokens.json"),
        policy=local,
    )
    async with Client(url, auth=auth) as client:
        print("whoami ->", (await client.call_tool("whoami", {})).get("structuredContent"))
        print("purge  ->", (await client.call_tool("purge", {}))["content"][0]["text"])


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp")
