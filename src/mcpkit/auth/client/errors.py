"""Errors raised by the OAuth client.  Each says what went wrong and what to do."""

from __future__ import annotations

import httpx

__all__ = [
    "AuthorizationError",
    "DiscoveryError",
    "NoOAuthOffered",
    "OAuthError",
    "SsrfBlocked",
    "TokenError",
    "UntrustedAuthorizationServer",
    "UserInteractionRequired",
]


class OAuthError(Exception):
    """Base class: the client could not obtain or use an access token."""


class DiscoveryError(OAuthError):
    """Protected-resource or authorization-server metadata is missing or not acceptable."""


class NoOAuthOffered(DiscoveryError):
    """The server refused the request (401) but publishes no protected-resource metadata
    (RFC 9728): it takes credentials some other way (a static bearer token, an API key),
    not through an OAuth sign-in the client could run."""


class AuthorizationError(OAuthError):
    """The authorization step failed (user denied, state/iss mismatch, no code, ...)."""


class UserInteractionRequired(AuthorizationError):
    """The authorization endpoint wants a person (a login or consent page) where a headless
    handler expected an immediate redirect; nothing was refused yet."""


class TokenError(OAuthError):
    """The token endpoint refused a request (``error`` holds the OAuth error code)."""

    def __init__(self, message: str, error: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.status = status


class UntrustedAuthorizationServer(DiscoveryError):
    """The resource's metadata named an authorization server (or that server's metadata a
    token endpoint) other than the one the client's credentials are pinned to.  Raised
    before anything is sent there: neither the client's credentials nor a subject token
    left the client.  ``expected`` and ``found`` are the URLs (never a secret)."""

    def __init__(self, message: str, *, expected: str, found: str) -> None:
        super().__init__(message)
        self.expected = expected
        self.found = found


class SsrfBlocked(httpx.TransportError):
    """A discovery or token URL points somewhere the client must not go (SSRF guard)."""
