"""An upstream that says who called it: the claims of the access token it verified.

Served behind ``mcpkit serve --auth-issuer`` (an OAuth protected resource), so every tool
sees ``ctx.principal`` from a token the server itself checked (issuer, audience = this
server's URL, expiry).  The token itself never reaches the tool; its ``jti`` tells tokens
apart.
"""

from __future__ import annotations

from typing import Any

from mcpkit import Context, Server

server = Server("identity", "1.0.0")


@server.tool
def token_info(ctx: Context) -> dict[str, Any]:
    """The verified token's subject, audience, actor, client and id."""
    claims = dict(getattr(ctx.principal, "claims", None) or {})
    return {k: claims.get(k) for k in ("sub", "aud", "act", "client_id", "jti", "scope")}
