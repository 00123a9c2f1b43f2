"""The interactive grant: OAuth 2.1 authorization code with PKCE S256.

:class:`AuthorizationCodeGrant` refuses a server that does not advertise S256, sends the
RFC 8707 ``resource``, and checks the RFC 9207 ``iss`` exactly before the code is
redeemed.  The client is known by pre-registration, then a Client ID Metadata Document,
then Dynamic Client Registration (credentials kept per issuer).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, Unpack
from urllib.parse import urlencode, urlsplit, urlunsplit

from ..urls import is_loopback_host
from .browser import RedirectHandler, check_browser_url
from .clientauth import choose_auth_method
from .errors import AuthorizationError, DiscoveryError, TokenError
from .flow import Fetch, Flow, GrantContext, OAuthEngine, UserAuthorization, json_body
from .grant_base import Grant, secret_client
from .metadata import AuthServerMetadata
from .store import ClientInfo, TokenSet

__all__ = ["AuthorizationCodeGrant", "Registration"]


class Registration(TypedDict, total=False):
    """How the interactive client is known to the authorization server (see
    :class:`AuthorizationCodeGrant`); ``OAuthClientAuth`` takes the same keywords."""

    client_name: str
    client_id: str | None
    client_secret: str | None
    client_issuer: str | None
    client_metadata_url: str | None
    client_metadata: Mapping[str, Any] | None
    request_refresh_tokens: bool


class AuthorizationCodeGrant(Grant):
    """The interactive grant; ``registration``: pre-registered ``client_id`` (for
    ``client_issuer`` only, when given), else ``client_metadata_url``, else dynamic
    registration named ``client_name`` (default ``"mcpkit"``) with ``client_metadata``."""

    wants_refresh = True

    def __init__(
        self, redirect_handler: RedirectHandler, **registration: Unpack[Registration]
    ) -> None:
        client_metadata_url = registration.get("client_metadata_url")
        if client_metadata_url is not None:
            parts = urlsplit(client_metadata_url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path")
        self.redirect_handler = redirect_handler
        self.client_name = registration.get("client_name", "mcpkit")
        self.client_id = registration.get("client_id")
        self.client_secret = registration.get("client_secret")
        self.client_issuer = registration.get("client_issuer")
        self.client_metadata_url = client_metadata_url
        self.client_metadata = dict(registration.get("client_metadata") or {})
        self.wants_refresh = registration.get("request_refresh_tokens", True)

    # ------------------------------------------------------------------ registration
    def choose_issuer(self, servers: Sequence[str]) -> str:
        if self.client_issuer is not None and self.client_issuer in servers:
            return self.client_issuer
        return servers[0]

    def _preregistered(self, as_meta: AuthServerMetadata) -> ClientInfo | None:
        if self.client_id is None:
            return None
        if self.client_issuer is not None and self.client_issuer != as_meta.issuer:
            return None
        return secret_client(
            self.client_id, self.client_secret, as_meta, registration="pre-registered"
        )

    def _metadata_document(self, as_meta: AuthServerMetadata) -> ClientInfo | None:
        if self.client_metadata_url is None or not as_meta.client_id_metadata_document_supported:
            return None
        return ClientInfo(
            self.client_metadata_url, None, "none", as_meta.issuer, registration="metadata-document"
        )

    def existing_client(
        self, engine: OAuthEngine, as_meta: AuthServerMetadata
    ) -> ClientInfo | None:
        found = self._preregistered(as_meta)
        if found is not None:
            return found
        stored = engine.store.get_client(as_meta.issuer)
        if stored is not None and stored.usable() and stored.issuer == as_meta.issuer:
            return stored
        return self._metadata_document(as_meta)

    def registration_request(self, as_meta: AuthServerMetadata) -> dict[str, Any]:
        redirect = self.redirect_handler.redirect_uri
        parts = urlsplit(redirect)
        native = parts.scheme not in ("http", "https") or is_loopback_host(parts.hostname)
        supported = as_meta.token_endpoint_auth_methods_supported
        # A native app cannot keep a secret: be a public client when the AS allows it.
        method = "none" if "none" in supported else choose_auth_method(supported, has_secret=True)
        grant_types = ["authorization_code"]
        if self.wants_refresh:
            grant_types.append("refresh_token")
        body: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": [redirect],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native" if native else "web",
        }
        body.update(self.client_metadata)
        return body

    def register(self, engine: OAuthEngine, as_meta: AuthServerMetadata) -> Flow[ClientInfo]:
        endpoint = as_meta.registration_endpoint
        if endpoint is None:
            raise AuthorizationError(
                f"{as_meta.issuer} supports neither Client ID Metadata Documents nor dynamic "
                "registration: pass client_id (and client_secret) from a manual registration"
            )
        import httpx

        body = self.registration_request(as_meta)
        request = httpx.Request("POST", endpoint, json=body, headers={"Accept": "application/json"})
        response: httpx.Response = yield Fetch(request)
        if response.status_code not in (200, 201):
            raise AuthorizationError(
                f"dynamic client registration at {endpoint} failed (HTTP {response.status_code})"
            )
        data = json_body(response)
        if not isinstance(data, dict) or not isinstance(data.get("client_id"), str):
            raise AuthorizationError("the registration response has no client_id")
        secret = data.get("client_secret") if isinstance(data.get("client_secret"), str) else None
        method = data.get("token_endpoint_auth_method")
        if not isinstance(method, str):
            method = body["token_endpoint_auth_method"]
        if method in ("client_secret_basic", "client_secret_post") and secret is None:
            method = "none"
        expires = data.get("client_secret_expires_at")
        client = ClientInfo(
            data["client_id"],
            secret,
            method,
            as_meta.issuer,
            float(expires) if isinstance(expires, (int, float)) and expires else None,
            registration="dynamic",
        )
        engine.store.set_client(as_meta.issuer, client)
        return client

    def client(self, engine: OAuthEngine, as_meta: AuthServerMetadata) -> Flow[ClientInfo]:
        found = self.existing_client(engine, as_meta)
        if found is not None:
            return found
        return (yield from self.register(engine, as_meta))

    # ------------------------------------------------------------------ the grant
    def obtain(self, ctx: GrantContext) -> Flow[TokenSet]:
        as_meta = ctx.as_meta
        if not as_meta.supports_s256:
            raise DiscoveryError(
                f"{as_meta.issuer} does not advertise PKCE S256 "
                "(code_challenge_methods_supported); refusing to authorize without it"
            )
        if as_meta.authorization_endpoint is None:
            raise DiscoveryError(f"{as_meta.issuer} has no authorization_endpoint")
        check_browser_url(as_meta.authorization_endpoint)
        client = yield from self.client(ctx.engine, as_meta)
        verifier, challenge = self.pkce()
        state = secrets.token_urlsafe(32)
        redirect_uri = self.redirect_handler.redirect_uri
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": ctx.resource,
        }
        if ctx.scopes:
            params["scope"] = " ".join(ctx.scopes)
        url = check_browser_url(_with_query(as_meta.authorization_endpoint, params))
        answer: Mapping[str, str] = yield UserAuthorization(url, self.redirect_handler)
        code = self.check_response(answer, state, as_meta)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": ctx.resource,
        }
        try:
            return (yield from ctx.engine.token_request(as_meta, form, client))
        except TokenError as exc:
            if exc.error == "invalid_client" and client.registration == "dynamic":
                ctx.engine.store.set_client(as_meta.issuer, None)  # register afresh next time
            raise

    def pkce(self) -> tuple[str, str]:
        """A fresh PKCE code verifier and its S256 challenge (a subclass finishing a grant
        that another process began gives the pair that one sent)."""
        return _pkce()

    @staticmethod
    def check_response(answer: Mapping[str, str], state: str, as_meta: AuthServerMetadata) -> str:
        """RFC 9207 first (even for error responses), then state, then the outcome."""
        iss = answer.get("iss")
        if iss is not None:
            if iss != as_meta.issuer:
                raise AuthorizationError(
                    f"the authorization response came from issuer {iss!r}, expected "
                    f"{as_meta.issuer!r} (RFC 9207 mix-up protection); the code was not used"
                )
        elif as_meta.iss_parameter_supported:
            raise AuthorizationError(
                "the authorization server promised an 'iss' parameter but the response has "
                "none (RFC 9207); the code was not used"
            )
        if answer.get("state") != state:
            raise AuthorizationError("the authorization response's state does not match")
        if "error" in answer:
            description = answer.get("error_description") or ""
            raise AuthorizationError(f"authorization failed: {answer['error']} {description}")
        code = answer.get("code")
        if not code:
            raise AuthorizationError("the authorization response has no code")
        return code


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-]
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _with_query(url: str, params: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    query = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
