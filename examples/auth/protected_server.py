"""An MCP server behind OAuth: a resource server that trusts one authorization server.

* tokens are JWTs checked against the AS's JWKS: issuer, audience (= this server's URL),
  expiry, signature;
* every call needs scope ``mcp``; ``purge`` also needs ``mcp:admin`` (a 403 with
  ``error="insufficient_scope"`` makes a client step up);
* tools see who called them in ``ctx.principal``.

Run the local authorization server first, then this::

    python examples/auth/local_as.py --port 9000
    python examples/auth/protected_server.py --issuer http://127.0.0.1:9000 --port 8000
    python examples/auth/demo_client.py http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from mcpkit.auth import BearerAuth, JwtVerifier
from mcpkit.server import Context, Server
from mcpkit.transports.http import McpHttpApp

server = Server("protected-demo", instructions="A demo server that needs an OAuth token.")


@server.tool
def whoami(ctx: Context) -> dict[str, Any]:
    """Who is calling, as the access token says."""
    principal = ctx.principal
    return {
        "subject": principal.subject,
        "client_id": principal.client_id,
        "scopes": sorted(principal.scopes),
    }


@server.tool
def purge(ctx: Context) -> str:
    """Pretend to delete everything (needs the mcp:admin scope)."""
    return f"purged on behalf of {ctx.principal.subject}"


def build_app(issuer: str, resource: str, *, jwks_uri: str | None = None) -> McpHttpApp:
    verifier = JwtVerifier(issuer=issuer, audience=resource, jwks_uri=jwks_uri)
    auth = BearerAuth(
        verifier,
        resource=resource,
        authorization_servers=[issuer],
        required_scopes=["mcp"],
        tool_scopes={"purge": ["mcp:admin"]},
        resource_name="mcpkit protected demo",
    )
    return McpHttpApp(server, auth=auth)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="protected MCP server (demo)")
    parser.add_argument("--issuer", default="http://127.0.0.1:9000")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    resource = f"http://{args.host}:{args.port}/mcp"
    app = build_app(args.issuer, resource)
    print(f"protected MCP server at {resource} (authorization server {args.issuer})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
