"""Who may ask for tokens: registered clients (RFC 7591), Client ID Metadata Documents,
and the redirect URI rules.

* Dynamic registration validates the request strictly (redirect URIs, grant and response
  types, the token endpoint auth method) and answers the RFC 7591 errors.
* A ``client_id`` that is an https URL is a Client ID Metadata Document: fetched through
  the SSRF guard of :mod:`mcpkit.auth.client.ssrf` (private, link-local and metadata
  addresses refused; loopback only when the policy allows it), size-capped, and its
  ``client_id`` must equal its own URL.
* Redirect URIs match exactly, except that a loopback redirect (``127.0.0.1``, ``[::1]``,
  ``localhost`` over http) matches on any port (RFC 8252 §7.3).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..client.errors import SsrfBlocked
from ..client.ssrf import UrlPolicy, check_url, guarded_async_client
from ..urls import is_loopback_host

__all__ = ["Client", "RegistrationError", "fetch_metadata_document", "redirect_matches", "register"]

GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
AUTH_METHODS = frozenset({"none", "client_secret_basic", "client_secret_post"})


class RegistrationError(Exception):
    """A client registration or metadata document refused (RFC 7591 §3.2.2)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True, slots=True)
class Client:
    """A client the server knows: registered, pre-registered, or a metadata document."""

    client_id: str
    redirect_uris: tuple[str, ...]
    token_endpoint_auth_method: str = "none"
    client_secret: str | None = None
    client_name: str | None = None
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def display_name(self) -> str:
        return self.client_name or self.client_id

    def record(self) -> dict[str, Any]:
        """The client as stored (and as the registration response shows it)."""
        out: dict[str, Any] = {
            "client_id": self.client_id,
            "redirect_uris": list(self.redirect_uris),
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "grant_types": list(self.grant_types),
            "response_types": ["code"],
        }
        if self.client_secret is not None:
            out["client_secret"] = self.client_secret
        if self.client_name:
            out["client_name"] = self.client_name
        return out

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Client:
        return cls(
            client_id=str(data["client_id"]),
            redirect_uris=tuple(data.get("redirect_uris", ())),
            token_endpoint_auth_method=str(data.get("token_endpoint_auth_method", "none")),
            client_secret=data.get("client_secret"),
            client_name=data.get("client_name"),
            grant_types=tuple(data.get("grant_types", ("authorization_code", "refresh_token"))),
        )


def redirect_matches(registered: tuple[str, ...], asked: str) -> bool:
    """Exact string match, or a loopback http redirect that differs only in its port."""
    if asked in registered:
        return True
    try:
        parts = urlsplit(asked)
        port_free = parts.scheme == "http" and is_loopback_host(parts.hostname)
    except ValueError:
        return False
    if not port_free:
        return False
    for uri in registered:
        other = urlsplit(uri)
        if (
            other.scheme == "http"
            and other.hostname == parts.hostname
            and other.path == parts.path
            and other.query == parts.query
            and is_loopback_host(other.hostname)
        ):
            return True
    return False


def _check_redirect_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri:
        raise RegistrationError("invalid_redirect_uri", "a redirect URI must be a string")
    try:
        parts = urlsplit(uri)
    except ValueError:
        raise RegistrationError("invalid_redirect_uri", f"not a URI: {uri!r}") from None
    if parts.fragment or not parts.scheme:
        raise RegistrationError(
            "invalid_redirect_uri", f"not an absolute URI without fragment: {uri!r}"
        )
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise RegistrationError("invalid_redirect_uri", f"http is only for loopback: {uri!r}")
    if parts.scheme in ("javascript", "data", "file", "vbscript"):
        raise RegistrationError("invalid_redirect_uri", f"scheme not allowed: {uri!r}")
    if parts.scheme == "https" and not parts.hostname:
        raise RegistrationError("invalid_redirect_uri", f"no host: {uri!r}")
    return uri


def _client_from_metadata(doc: Mapping[str, Any], client_id: str, secret: str | None) -> Client:
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise RegistrationError("invalid_redirect_uri", "redirect_uris is required")
    redirect_uris = tuple(_check_redirect_uri(u) for u in uris)
    method = doc.get(
        "token_endpoint_auth_method", "none" if secret is None else "client_secret_basic"
    )
    if method not in AUTH_METHODS:
        raise RegistrationError(
            "invalid_client_metadata", f"token_endpoint_auth_method {method!r} is not supported"
        )
    grants = doc.get("grant_types", ["authorization_code", "refresh_token"])
    if (
        not isinstance(grants, list)
        or not set(grants) <= GRANT_TYPES
        or "authorization_code" not in grants
    ):
        raise RegistrationError(
            "invalid_client_metadata", f"grant_types must be among {sorted(GRANT_TYPES)}"
        )
    responses = doc.get("response_types", ["code"])
    if responses != ["code"]:
        raise RegistrationError("invalid_client_metadata", 'response_types must be ["code"]')
    name = doc.get("client_name")
    return Client(
        client_id=client_id,
        redirect_uris=redirect_uris,
        token_endpoint_auth_method=str(method),
        client_secret=secret if method != "none" else None,
        client_name=name if isinstance(name, str) else None,
        grant_types=tuple(grants),
    )


def register(doc: object) -> Client:
    """A new client from an RFC 7591 registration request (a confidential one gets a secret)."""
    if not isinstance(doc, dict):
        raise RegistrationError(
            "invalid_client_metadata", "the registration request must be a JSON object"
        )
    method = doc.get("token_endpoint_auth_method", "client_secret_basic")
    secret = None if method == "none" else secrets.token_urlsafe(32)
    client_id = f"mcp-{secrets.token_urlsafe(16)}"
    return _client_from_metadata({**doc, "token_endpoint_auth_method": method}, client_id, secret)


def is_metadata_document_id(client_id: str) -> bool:
    """An https ``client_id`` with a path names its own metadata document."""
    parts = urlsplit(client_id)
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")


async def fetch_metadata_document(client_id: str, policy: UrlPolicy) -> Client:
    """The client a Client ID Metadata Document describes, fetched through the SSRF guard."""
    try:
        check_url(client_id, policy)
        async with guarded_async_client(policy) as http:
            response = await http.get(client_id, headers={"Accept": "application/json"})
    except SsrfBlocked as exc:
        raise RegistrationError(
            "invalid_client", f"the client metadata URL is refused: {exc}"
        ) from None
    except httpx.HTTPError as exc:
        raise RegistrationError(
            "invalid_client", f"cannot fetch the client metadata: {type(exc).__name__}"
        ) from None
    if response.status_code != 200:
        raise RegistrationError(
            "invalid_client", f"the client metadata answered HTTP {response.status_code}"
        )
    try:
        doc = response.json()
    except ValueError:
        raise RegistrationError("invalid_client", "the client metadata is not JSON") from None
    if not isinstance(doc, dict) or doc.get("client_id") != client_id:
        raise RegistrationError("invalid_client", "the client metadata names another client_id")
    if doc.get("token_endpoint_auth_method", "none") != "none":
        raise RegistrationError(
            "invalid_client", "a metadata-document client must be public (none)"
        )
    return _client_from_metadata({**doc, "token_endpoint_auth_method": "none"}, client_id, None)


def now() -> int:
    return int(time.time())
