"""The gateway's ``/connect`` endpoints (``per_user`` upstreams, see :mod:`.connect`):

* ``GET /connect/{upstream}?link=...`` — the page a connect link opens: redeems the
  link (one use; a request carrying another caller's credentials is refused, 403), starts
  the authorization code grant for the link's principal and redirects (302) to the
  upstream's authorization server;
* ``GET /connect/{upstream}/callback`` — where the authorization server sends the user
  back (any replica on the same state backend): finishes the grant, stores the tokens,
  sealed, for that principal and tells a 2025-11-25 caller's session it may retry;
* ``GET /connect`` — the caller's connections (their bearer credentials), no tokens;
* ``DELETE /connect/{upstream}`` and ``DELETE /connect`` — revoke one or all of them:
  the next call needing that upstream asks to connect again.

Connections made, refused links and revocations are audited (method ``connect``).
"""

from __future__ import annotations

import html
import time
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote

from ..transports.http import asgi
from ..transports.http.asgi import Receive, Scope, Send
from .connect import ConnectFlows, Connections
from .connect_records import LinkRefused, redeem_link
from .policy import Caller

if TYPE_CHECKING:
    from .app import GatewayApp

__all__ = ["CONNECT", "is_connect_path", "serve_connect"]

CONNECT = "/connect"
_HTML = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]


def is_connect_path(path: str) -> bool:
    return path == CONNECT or path.startswith(CONNECT + "/")


def per_user_upstreams(app: GatewayApp) -> list[str]:
    return [
        u.name for u in app.config.upstreams if u.oauth is not None and u.oauth.kind == "per_user"
    ]


async def serve_connect(app: GatewayApp, scope: Scope, receive: Receive, send: Send) -> None:
    path: str = scope.get("path", "")
    method = scope.get("method", "GET")
    parts = [unquote(p) for p in path[len(CONNECT) :].split("/") if p]
    query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
    if not parts:
        if method not in ("GET", "DELETE"):
            await _page(send, 405, "Use GET or DELETE.")
            return
        await _own_connections(app, scope, send, None, revoke=method == "DELETE")
        return
    upstream = parts[0]
    if upstream not in per_user_upstreams(app) or len(parts) > 2:
        await _page(send, 404, "No such connection.")
        return
    if method == "DELETE" and len(parts) == 1:
        await _own_connections(app, scope, send, upstream, revoke=True)
        return
    if method != "GET":
        await _page(send, 405, "Use GET.")
        return
    if len(parts) == 2 and parts[1] == "callback":
        await _callback(app, upstream, query, send)
    elif len(parts) == 1:
        await _start(app, scope, upstream, query.get("link"), send)
    else:
        await _page(send, 404, "No such page.")


async def _caller(app: GatewayApp, scope: Scope, send: Send) -> Caller | None:
    """The authenticated caller, or None after answering 401."""
    try:
        return await app.authenticator(scope, asgi.header_map(scope))
    except asgi.Rejection as rejection:
        await asgi.send_error(send, rejection.status, rejection.error, None, rejection.headers)
        return None


async def _own_connections(
    app: GatewayApp, scope: Scope, send: Send, upstream: str | None, *, revoke: bool
) -> None:
    caller = await _caller(app, scope, send)
    if caller is None:
        return
    connections = Connections(app.server)
    names = [upstream] if upstream is not None else per_user_upstreams(app)
    if not revoke:
        found = await connections.of(caller.name, names)
        await asgi.send_json(send, 200, {"connections": [c.describe() for c in found]})
        return
    revoked = [name for name in names if await connections.delete(caller.name, name)]
    for name in revoked:
        _audit(app, caller.name, name, "revoked")
    if upstream is not None and not revoked:
        await asgi.send_json(send, 404, {"error": f"no connection to {upstream}"})
        return
    await asgi.send_json(send, 200, {"revoked": revoked})


async def _start(
    app: GatewayApp, scope: Scope, upstream: str, link: str | None, send: Send
) -> None:
    presented: str | None = None
    if "authorization" in asgi.header_map(scope):  # credentials shown: they must match
        caller = await _caller(app, scope, send)
        if caller is None:
            return
        presented = caller.name
    try:
        redeemed = await redeem_link(app.server, upstream, link, presented)
    except LinkRefused as refused:
        _audit(app, presented, upstream, f"connect_refused:{refused.status}")
        await _page(send, refused.status, str(refused))
        return
    config = next(u for u in app.config.upstreams if u.name == upstream)
    try:
        url = await flows(app).start(redeemed.principal, config, redeemed.completion)
    except Exception as exc:
        await _page(send, 502, f"The {upstream} sign-in could not start: {exc}")
        return
    await asgi.send_empty(send, 302, [(b"location", url.encode()), (b"cache-control", b"no-store")])


async def _callback(app: GatewayApp, upstream: str, query: dict[str, str], send: Send) -> None:
    config = next(u for u in app.config.upstreams if u.name == upstream)
    try:
        finished = await flows(app).finish(config, query)
    except LookupError as exc:
        await _page(send, 400, str(exc))
        return
    if finished.error is not None:
        _audit(app, finished.principal, upstream, "connect_failed")
        await _page(send, 400, f"Connecting {upstream} failed: {finished.error}")
        return
    _audit(app, finished.principal, upstream, "connected")
    await _page(send, 200, f"Your {upstream} account is connected. You can close this window.")


def _audit(app: GatewayApp, who: str | None, upstream: str | None, outcome: str) -> None:
    """One audit line (and metrics sample) for a ``/connect`` request: method
    ``connect``, the upstream as the name; never a link or a token."""
    principal = Caller(who) if who is not None else None
    app._record(principal, "connect", upstream, outcome, time.perf_counter())


def flows(app: GatewayApp) -> ConnectFlows:
    found = app.connect_flows
    if found.tg is None:
        raise RuntimeError("the gateway is not running")
    return found


async def _page(send: Send, status: int, text: str) -> None:
    body = f"<!doctype html><title>mcpkit gateway</title><p>{html.escape(text)}</p>\n"
    await asgi.send_bytes(send, status, body.encode(), _HTML)
