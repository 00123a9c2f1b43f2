"""The grant interface and the token requests every grant builds on.

:class:`Grant` is what :class:`~.flow.OAuthEngine` asks once the authorization server is
known; :func:`token_form`, :func:`exchange_form` and :func:`check_issued` are the one
implementation of the token request forms (RFC 6749, RFC 8707 ``resource``, RFC 8693
token exchange) that the grants of :mod:`.grants` and :mod:`.authcode` share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .clientauth import choose_auth_method
from .errors import TokenError
from .flow import Flow, GrantContext, OAuthEngine
from .metadata import AuthServerMetadata
from .store import ClientInfo, TokenSet

__all__ = [
    "ACCESS_TOKEN",
    "ID_JAG",
    "ID_TOKEN",
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "Grant",
    "check_issued",
    "exchange_form",
    "same_url",
    "secret_client",
    "token_form",
]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"


def token_form(
    grant_type: str, resource: str, scopes: Sequence[str] | None = None, **fields: str
) -> dict[str, str]:
    """A token request's form: the grant's own ``fields``, the RFC 8707 ``resource`` and,
    when any are asked for, ``scope`` (client authentication is added by the caller)."""
    form = {"grant_type": grant_type, **fields, "resource": resource}
    if scopes:
        form["scope"] = " ".join(scopes)
    return form


def exchange_form(
    subject_token: str,
    subject_token_type: str,
    requested_token_type: str,
    *,
    resource: str,
    audience: str | None = None,
    scopes: Sequence[str] | None = None,
) -> dict[str, str]:
    """An RFC 8693 token-exchange request (client authentication is added by the caller)."""
    fields = {
        "requested_token_type": requested_token_type,
        "subject_token": subject_token,
        "subject_token_type": subject_token_type,
    }
    if audience:
        fields["audience"] = audience
    return token_form(TOKEN_EXCHANGE, resource, scopes, **fields)


def check_issued(data: Mapping[str, Any], requested: str, issuer: str) -> None:
    """RFC 8693 §2.2.1: ``issued_token_type`` must be what was asked for (absent: assumed)."""
    issued = data.get("issued_token_type", requested)
    if issued != requested:
        raise TokenError(f"{issuer} issued a token of type {issued!r}, not {requested!r}")


class Grant:
    """Base: obtain a token for ``ctx.resource`` from ``ctx.as_meta``."""

    #: add ``offline_access`` when the AS supports it (grants that get refresh tokens)
    wants_refresh = False
    #: obtain a token before the first request once the authorization server is known,
    #: instead of waiting for the resource's 401 (grants that need no user)
    proactive = False

    def choose_issuer(self, servers: Sequence[str]) -> str:
        return servers[0]

    def check_destination(self, as_meta: AuthServerMetadata) -> None:
        """Raise before this grant's secrets go to ``as_meta``'s token endpoint, when they
        must not go there (default: any authorization server the resource names)."""

    def existing_client(
        self, engine: OAuthEngine, as_meta: AuthServerMetadata
    ) -> ClientInfo | None:
        """Credentials to refresh with (no registration here)."""
        return None

    def obtain(self, ctx: GrantContext) -> Flow[TokenSet]:
        raise NotImplementedError
        yield  # pragma: no cover  # noqa: V201 (the yield makes obtain a generator)


def same_url(a: str, b: str) -> bool:
    """Whether two issuer URLs are the same one (a trailing slash aside)."""
    return a.rstrip("/") == b.rstrip("/")


def secret_client(
    client_id: str, client_secret: str | None, as_meta: AuthServerMetadata, **extra: Any
) -> ClientInfo:
    """A client known by id (and maybe secret): the method the AS and the secret allow."""
    method = choose_auth_method(
        as_meta.token_endpoint_auth_methods_supported, has_secret=client_secret is not None
    )
    return ClientInfo(client_id, client_secret, method, as_meta.issuer, **extra)
