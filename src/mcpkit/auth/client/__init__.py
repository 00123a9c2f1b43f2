"""OAuth 2.1 for MCP clients: an ``httpx.Auth`` that discovers, registers, authorizes,
refreshes and steps up on its own, with SSRF protection on every discovery fetch."""

from __future__ import annotations

from .auth import (
    ClientCredentialsAuth,
    EnterpriseAuth,
    JwtBearerAuth,
    OAuthAuth,
    OAuthClientAuth,
    TokenExchangeAuth,
)
from .browser import (
    HeadlessRedirectHandler,
    LoopbackRedirectHandler,
    RedirectHandler,
    check_browser_url,
    open_in_browser,
)
from .errors import (
    AuthorizationError,
    DiscoveryError,
    NoOAuthOffered,
    OAuthError,
    SsrfBlocked,
    TokenError,
    UntrustedAuthorizationServer,
    UserInteractionRequired,
)
from .ssrf import UrlPolicy, check_address, check_url
from .store import ClientInfo, FileTokenStore, InMemoryTokenStore, TokenSet, TokenStore

__all__ = [
    "AuthorizationError",
    "ClientCredentialsAuth",
    "ClientInfo",
    "DiscoveryError",
    "EnterpriseAuth",
    "FileTokenStore",
    "HeadlessRedirectHandler",
    "InMemoryTokenStore",
    "JwtBearerAuth",
    "LoopbackRedirectHandler",
    "NoOAuthOffered",
    "OAuthAuth",
    "OAuthClientAuth",
    "OAuthError",
    "RedirectHandler",
    "SsrfBlocked",
    "TokenError",
    "TokenExchangeAuth",
    "TokenSet",
    "TokenStore",
    "UntrustedAuthorizationServer",
    "UrlPolicy",
    "UserInteractionRequired",
    "check_address",
    "check_browser_url",
    "check_url",
    "open_in_browser",
]
