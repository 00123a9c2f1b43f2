"""``mcpkit proxy URL``: a stdio server in front of a remote Streamable HTTP server that
needs an OAuth login, for hosts that launch only stdio commands (what ``mcp-remote``
does).

The remote server is reached with mcpkit's OAuth client (authorization code + PKCE,
discovery, registration, refresh, step-up): the first time, the user's browser opens on
the authorization page (the URL is also printed on stderr, which hosts show in their
logs) and the redirect comes back to a one-shot listener on 127.0.0.1.  Tokens live in
the user's token store (``$MCPKIT_TOKEN_FILE``, else ``~/.config/mcpkit/oauth-tokens.json``,
0600, shared with ``mcpkit host``), so a restarted proxy uses them, or refreshes them,
without asking again.  Everything else is :func:`mcpkit.compose.proxy`.

:func:`login_auth` is the same OAuth for ``mcpkit list URL`` and ``mcpkit call URL``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .command import Command, add_list_option

if TYPE_CHECKING:
    import httpx

__all__ = ["COMMAND", "login_auth"]

#: How long a login may take (the person is in a browser).
LOGIN_TIMEOUT_S = 300.0
#: Where the per-URL callback ports are chosen (below the usual ephemeral range).
_PORTS = (20000, 30000)


def is_remote_url(target: str) -> bool:
    return urlsplit(target).scheme in ("http", "https")


def _announce(url: str) -> None:
    """Open the authorization page in the user's browser (checked, never via a shell);
    the URL is printed on stderr too, for when no browser can be started."""
    from ..auth.client import check_browser_url, open_in_browser
    from ..auth.client.errors import AuthorizationError

    check_browser_url(url)
    print(f"mcpkit: log in to continue: {url}", file=sys.stderr, flush=True)
    try:
        open_in_browser(url)
    except AuthorizationError as exc:
        print(f"mcpkit: {exc}", file=sys.stderr, flush=True)


def callback_port_for(url: str) -> int:
    """The loopback port a login for ``url`` listens on, the same in every run: a client
    registered once (dynamic registration, kept in the token store) names its redirect
    URI, and authorization servers that match it exactly would refuse another port."""
    digest = hashlib.sha256(url.encode()).digest()
    return _PORTS[0] + int.from_bytes(digest[:4], "big") % (_PORTS[1] - _PORTS[0])


def login_auth(url: str, *, client_name: str, callback_port: int | None = None) -> httpx.Auth:
    """OAuth for the server at ``url``: it does nothing until the server answers 401,
    then logs in through the browser (or uses the stored, refreshed tokens).  The
    redirect comes back to ``callback_port`` (default :func:`callback_port_for`)."""
    from ..auth.client import FileTokenStore, LoopbackRedirectHandler, OAuthClientAuth, UrlPolicy
    from ..auth.urls import is_loopback_host
    from ..host.oauth import default_token_file

    port = callback_port if callback_port is not None else callback_port_for(url)
    handler = LoopbackRedirectHandler(port=port, open_url=_announce, timeout_s=LOGIN_TIMEOUT_S)
    local = is_loopback_host(urlsplit(url).hostname)
    return OAuthClientAuth(
        url,
        redirect_handler=handler,
        store=FileTokenStore(default_token_file()),
        client_name=client_name,
        policy=UrlPolicy.local_development() if local else None,
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", metavar="URL", help="the remote server's Streamable HTTP URL")
    p.add_argument("--name", help="the proxy's server name (default: the URL's host)")
    add_list_option(
        p, "--header", metavar="NAME:VALUE", help="an HTTP header for the remote (repeatable)"
    )
    p.add_argument(
        "--callback-port",
        type=int,
        default=None,
        metavar="PORT",
        help="the 127.0.0.1 port the login's redirect comes back to (default: one derived "
        "from the URL, the same every time)",
    )
    p.add_argument(
        "--no-login",
        action="store_true",
        help="no OAuth: the remote needs none, or --header carries the credentials",
    )


def run(args: argparse.Namespace) -> int:
    from ..transports.stdio import claim_stdio

    claimed = claim_stdio()  # from here a print() goes to stderr, never into the protocol
    url: str = args.url
    if not is_remote_url(url):
        print(f"mcpkit proxy: {url!r} is not an http(s) URL", file=sys.stderr)
        return 2
    headers: dict[str, str] = {}
    for item in args.header:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            print(f"mcpkit proxy: --header {item!r}: expected NAME:VALUE", file=sys.stderr)
            return 2
        headers[name.strip()] = value.strip()
    own_credentials = any(k.lower() == "authorization" for k in headers)
    from ..compose.proxy import proxy
    from ..transports.launch import serve

    options: dict[str, object] = {"headers": headers}
    if not (args.no_login or own_credentials):
        options["auth"] = login_auth(
            url, client_name="mcpkit proxy", callback_port=args.callback_port
        )
    server = proxy(
        url,
        name=args.name or urlsplit(url).hostname or "proxy",
        connect_timeout=LOGIN_TIMEOUT_S + 30.0,
        **options,
    )
    serve(server, "stdio", fds=claimed)
    return 0


COMMAND = Command(
    name="proxy",
    help="serve a remote (OAuth) server over stdio",
    description=(
        "A stdio server that forwards everything to a remote Streamable HTTP server, "
        "logging in with OAuth on first use (the browser opens) and keeping the tokens in "
        "your token store, refreshed: for hosts that launch only stdio commands."
    ),
    examples=[
        "mcpkit proxy https://mcp.example.com/mcp",
        "mcpkit install claude-desktop https://mcp.example.com/mcp   # writes this command",
    ],
    arguments=add_arguments,
    run=run,
    notes="Tokens: $MCPKIT_TOKEN_FILE, else ~/.config/mcpkit/oauth-tokens.json (0600).",
)
