"""An MCP server with its own authorization server, signing users in at GitHub.

One line makes the server an OAuth 2.1 resource server *and* serves the authorization
server its clients register with (dynamic registration or a Client ID Metadata
Document), consent, PKCE, rotating refresh tokens, JWT access tokens for this server only::

    app = McpHttpApp(server, auth=AuthorizationServer(issuer, upstream=github(ID, SECRET)))

Register an OAuth App at https://github.com/settings/developers with the callback URL
``http://127.0.0.1:8000/oauth/callback``, then::

    GITHUB_CLIENT_ID=... GITHUB_CLIENT_SECRET=... python examples/auth/federated_server.py
    python examples/auth/demo_client.py http://127.0.0.1:8000/mcp

The tools see the GitHub user as ``ctx.principal`` (subject = the GitHub user id; email,
login and organizations as claims).  GitHub's tokens never leave this process.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from mcpkit.auth.client import UrlPolicy
from mcpkit.auth.server import AuthorizationServer, Upstream, github
from mcpkit.server import Context, Server
from mcpkit.state import StateBackend
from mcpkit.transports.http import McpHttpApp

server = Server("federated-demo", instructions="Sign in with GitHub, then ask who you are.")


@server.tool
def whoami(ctx: Context) -> dict[str, Any]:
    """Who is calling: the identity the authorization server put in the token."""
    principal = ctx.principal
    claims = principal.claims
    return {
        "subject": principal.subject,
        "email": claims.get("email"),
        "name": claims.get("name"),
        "groups": claims.get("groups", []),
        "client_id": principal.client_id,
    }


def build_app(
    issuer: str,
    upstream: Upstream,
    *,
    state: StateBackend | str = "sqlite:///.mcpkit/authserver.db",
    **options: Any,
) -> McpHttpApp:
    """The MCP server at ``{issuer}/mcp`` with its authorization server at ``issuer``."""
    authz = AuthorizationServer(issuer, upstream, state=state, **options)
    return McpHttpApp(server, auth=authz)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(
        description="MCP server + authorization server (GitHub sign-in)"
    )
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    issuer = f"http://127.0.0.1:{args.port}"
    upstream = github(os.environ["GITHUB_CLIENT_ID"], os.environ["GITHUB_CLIENT_SECRET"])
    # Loopback Client ID Metadata Documents are for local development only.
    app = build_app(issuer, upstream, metadata_policy=UrlPolicy.local_development())
    print(f"MCP server at {issuer}/mcp; authorization server at {issuer}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
