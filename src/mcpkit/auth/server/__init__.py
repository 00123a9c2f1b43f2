"""An OAuth 2.1 authorization server for mcpkit servers, federating sign-in upstream.

``McpHttpApp(server, auth=AuthorizationServer(issuer, upstream=oidc(...)))`` serves an MCP
server together with the authorization server its clients sign in with: RFC 8414
metadata, dynamic registration and Client ID Metadata Documents, PKCE S256, a consent
page, rotating refresh tokens with reuse detection, RFC 8707 audience-bound JWT access
tokens signed with rotating keys, revocation.  Users sign in at an upstream identity
provider (:mod:`.upstream`: generic OpenID Connect and presets for Entra ID, Google,
GitHub, Keycloak, Auth0, Okta).  Needs the ``authserver`` extra.

This package sits above ``state`` (its records) while the rest of ``mcpkit.auth`` sits
beside ``protocol``: see docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...types.lazy import lazy_exports

if TYPE_CHECKING:
    from .server import AuthorizationServer
    from .upstream import (
        GitHubUpstream,
        Identity,
        OidcUpstream,
        Upstream,
        UpstreamError,
        auth0,
        entra,
        github,
        google,
        keycloak,
        okta,
    )

__all__ = [
    "AuthorizationServer",
    "GitHubUpstream",
    "Identity",
    "OidcUpstream",
    "Upstream",
    "UpstreamError",
    "auth0",
    "entra",
    "github",
    "google",
    "keycloak",
    "okta",
]

_WHERE = {name: ".upstream" for name in __all__ if name != "AuthorizationServer"}
_WHERE["AuthorizationServer"] = ".server"

__getattr__ = lazy_exports(__name__, _WHERE)
