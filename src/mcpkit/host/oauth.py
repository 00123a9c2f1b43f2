"""OAuth to remote servers: mcpkit's own OAuth client, wired into the host's HTTP servers.

An ``mcpServers`` entry with a ``url`` gets :class:`~mcpkit.auth.client.OAuthClientAuth`
(authorization code + PKCE, RFC 9728/8414 discovery, dynamic registration, Client ID
Metadata Documents, or the pre-registered ``oauth.clientId``; refresh; step-up).  It does
nothing until the server answers 401, so servers without auth are unaffected, and an entry
with its own ``Authorization`` header, or ``"oauth": false``, is left alone.

The person is sent to the authorization page through the host's :class:`Interaction`
(``login_url``): the web page shows a "Log in" button that opens it, the terminal prints
it.  The authorization server redirects back to a one-shot listener on 127.0.0.1
(``oauth.callbackPort``, default a free port).  Tokens live in a per-user token store, a
0600 JSON file: ``$MCPKIT_TOKEN_FILE``, else ``~/.config/mcpkit/oauth-tokens.json``.
Discovery may reach loopback addresses only when the MCP server itself is on loopback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio.from_thread

from ..auth.client import (
    FileTokenStore,
    LoopbackRedirectHandler,
    OAuthClientAuth,
    TokenStore,
    UrlPolicy,
    check_browser_url,
)
from .config import ServerConfig, user_file

__all__ = ["ServerLogin", "default_token_file", "default_token_store", "wants_oauth"]


def default_token_file() -> Path:
    return user_file("MCPKIT_TOKEN_FILE", "oauth-tokens.json")


def default_token_store() -> TokenStore:
    return FileTokenStore(default_token_file())


def wants_oauth(config: ServerConfig) -> bool:
    """An HTTP server whose entry neither disables OAuth nor sets its own credentials."""
    if not config.url or config.oauth is False:
        return False
    return not any(k.lower() == "authorization" for k in config.headers)


def _loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("127.0.0.1", "::1", "localhost") or host.endswith(".localhost")


class ServerLogin:
    """OAuth for one server: the httpx ``Auth`` its client uses, and its log-in state."""

    def __init__(
        self, config: ServerConfig, store: TokenStore, on_url: Callable[[str, str], None]
    ) -> None:
        assert config.url is not None
        self.name = config.name
        self.store = store
        self._on_url = on_url
        #: The authorization URL the person has to open, while a log-in is pending.
        self.pending_url: str | None = None
        options: dict[str, Any] = config.oauth if isinstance(config.oauth, dict) else {}
        handler = LoopbackRedirectHandler(
            port=int(options.get("callbackPort") or 0), open_url=self._open
        )
        self.auth = OAuthClientAuth(
            config.url,
            redirect_handler=handler,
            store=store,
            client_name="mcpkit host",
            client_id=options.get("clientId"),
            client_secret=options.get("clientSecret"),
            scopes=options.get("scopes"),
            policy=UrlPolicy.local_development() if _loopback(config.url) else None,
        )

    def _open(self, url: str) -> None:
        """The redirect handler's ``open_url``: runs in a worker thread, so it hands the
        URL to the event loop rather than touching host state from here."""
        check_browser_url(url)
        anyio.from_thread.run_sync(self._announce, url)

    def _announce(self, url: str) -> None:
        self.pending_url = url
        self._on_url(self.name, url)

    def status(self) -> dict[str, Any]:
        engine = self.auth.engine
        tokens = engine.tokens if engine is not None else None
        if tokens is not None:
            self.pending_url = None
            return {"state": "logged-in", "url": None}
        if self.pending_url is not None:
            return {"state": "login-needed", "url": self.pending_url}
        return {"state": "none", "url": None}

    def logout(self) -> None:
        """Forget this server's tokens (the next 401 asks the person again)."""
        engine = self.auth.engine
        if engine is not None:
            engine.set_tokens(None)
        self.pending_url = None
