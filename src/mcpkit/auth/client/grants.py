"""How a token is obtained once the authorization server is known.

* :class:`AuthorizationCodeGrant` (:mod:`.authcode`) — OAuth 2.1 authorization code with
  PKCE S256 (refused when the server does not advertise S256), RFC 8707 ``resource``,
  RFC 9207 ``iss`` checked exactly before the code is redeemed; the client is registered
  by pre-registration, then a Client ID Metadata Document, then Dynamic Client
  Registration (credentials kept per issuer).
* :class:`ClientCredentialsGrant` — machine clients with ``client_secret_basic``/``post``
  or ``private_key_jwt``.
* :class:`JwtBearerGrant` — RFC 7523 JWT bearer (workload identity federation): the
  assertion comes from the environment; errors are surfaced, never retried.
* :class:`IdJagGrant` — enterprise-managed authorization (ID-JAG): RFC 8693 token exchange
  at the enterprise IdP, then a JWT bearer grant at the MCP server's authorization server.
* :class:`TokenExchangeGrant` — acting for someone else (RFC 8693): a token the caller
  holds is exchanged at the MCP server's authorization server for one whose audience is
  that server.  Both exchanges build their request with :func:`exchange_form` and check
  the answer with :func:`check_issued` (:mod:`.grant_base`, beside :class:`Grant`): one
  implementation of the RFC.
"""

from __future__ import annotations

import inspect
import secrets
from collections.abc import Callable, Sequence
from typing import Any, NotRequired, TypedDict, Unpack

from .authcode import AuthorizationCodeGrant, Registration
from .clientauth import choose_auth_method, load_private_key
from .errors import (
    AuthorizationError,
    DiscoveryError,
    SsrfBlocked,
    TokenError,
    UntrustedAuthorizationServer,
)
from .flow import Flow, GrantContext, OAuthEngine, json_body, refused
from .grant_base import (
    ACCESS_TOKEN,
    ID_JAG,
    ID_TOKEN,
    JWT_BEARER,
    Grant,
    check_issued,
    exchange_form,
    same_url,
    secret_client,
    token_form,
)
from .metadata import AuthServerMetadata
from .ssrf import check_url
from .store import ClientInfo, TokenSet

__all__ = [
    "AuthorizationCodeGrant",
    "ClientCredentials",
    "ClientCredentialsGrant",
    "Grant",
    "IdJagGrant",
    "IdJagSettings",
    "JwtBearerGrant",
    "OptionalClient",
    "Registration",
    "TokenExchangeGrant",
    "check_issued",
    "exchange_form",
    "token_form",
]


def _default_alg(key: Any) -> str:
    kty = getattr(key, "key_type", None)
    if kty == "RSA":
        return "RS256"
    if kty == "OKP":
        return "EdDSA"
    curve = getattr(key, "curve_name", None) or "P-256"
    return {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}.get(str(curve), "ES256")


class ClientCredentials(TypedDict, total=False):
    """How a machine client authenticates at the token endpoint: ``client_secret`` (basic
    or post, as the AS advertises) or ``private_key`` (``private_key_jwt``; PEM, JWK dict
    or joserfc key) signed with ``signing_alg``; ``auth_method`` forces one method.

    ``issuer`` pins the authorization server: the credentials (and, when exchanging, the
    subject token) go to that issuer only, whatever the resource's metadata names, and
    with ``token_endpoint`` to that endpoint only.  Anything else is refused with
    :class:`~mcpkit.auth.client.errors.UntrustedAuthorizationServer` before it is sent."""

    client_secret: str | None
    private_key: Any
    signing_alg: str | None
    auth_method: str | None
    assertion_audience: str | None
    issuer: str | None
    token_endpoint: str | None


class ClientCredentialsGrant(Grant):
    """The client_credentials grant (machine to machine)."""

    def __init__(self, client_id: str, **credentials: Unpack[ClientCredentials]) -> None:
        client_secret = credentials.get("client_secret")
        private_key = credentials.get("private_key")
        if client_secret is None and private_key is None:
            raise ValueError("client credentials need a client_secret or a private_key")
        self.client_id = client_id
        self.client_secret = client_secret
        self.private_key = load_private_key(private_key) if private_key is not None else None
        self.signing_alg = credentials.get("signing_alg") or (
            _default_alg(self.private_key) if self.private_key is not None else "ES256"
        )
        self.auth_method = credentials.get("auth_method")
        self.assertion_audience = credentials.get("assertion_audience")
        self.issuer = credentials.get("issuer")
        self.token_endpoint = credentials.get("token_endpoint")

    def choose_issuer(self, servers: Sequence[str]) -> str:
        if self.issuer is None:
            return servers[0]
        for server in servers:
            if same_url(server, self.issuer):
                return server
        raise UntrustedAuthorizationServer(
            f"the resource names the authorization server {', '.join(servers)}, not the "
            f"pinned issuer {self.issuer}; nothing was sent to it",
            expected=self.issuer,
            found=", ".join(servers),
        )

    def check_destination(self, as_meta: AuthServerMetadata) -> None:
        if self.issuer is not None and not same_url(as_meta.issuer, self.issuer):
            raise UntrustedAuthorizationServer(
                f"the authorization server is {as_meta.issuer}, not the pinned issuer "
                f"{self.issuer}; nothing was sent to it",
                expected=self.issuer,
                found=as_meta.issuer,
            )
        endpoint = as_meta.token_endpoint
        if self.token_endpoint is not None and endpoint != self.token_endpoint:
            raise UntrustedAuthorizationServer(
                f"{as_meta.issuer}'s token endpoint is {endpoint}, not the pinned "
                f"{self.token_endpoint}; nothing was sent to it",
                expected=self.token_endpoint,
                found=str(endpoint),
            )

    def _token_request(
        self, ctx: GrantContext, form: dict[str, str], issued_type: str | None = None
    ) -> Flow[TokenSet]:
        """``form`` at the token endpoint, authenticated with these credentials."""
        return (
            yield from ctx.engine.token_request(
                ctx.as_meta,
                form,
                self._client(ctx.as_meta),
                private_key=self.private_key,
                signing_alg=self.signing_alg,
                assertion_audience=self.assertion_audience,
                issued_type=issued_type,
            )
        )

    def _client(self, as_meta: AuthServerMetadata) -> ClientInfo:
        method = self.auth_method or choose_auth_method(
            as_meta.token_endpoint_auth_methods_supported,
            has_secret=self.client_secret is not None,
            has_key=self.private_key is not None,
        )
        if method == "none":
            method = "private_key_jwt" if self.private_key is not None else "client_secret_basic"
        return ClientInfo(self.client_id, self.client_secret, method, as_meta.issuer)

    def existing_client(
        self, engine: OAuthEngine, as_meta: AuthServerMetadata
    ) -> ClientInfo | None:
        return self._client(as_meta)

    def obtain(self, ctx: GrantContext) -> Flow[TokenSet]:
        form = token_form("client_credentials", ctx.resource, ctx.scopes)
        return (yield from self._token_request(ctx, form))


AssertionSource = str | Callable[[], str]


def _assertion(source: AssertionSource) -> str:
    value = source() if callable(source) else source
    if inspect.isawaitable(value) or not isinstance(value, str) or not value:
        raise AuthorizationError("the assertion source must return a JWT string")
    return value


class OptionalClient(TypedDict, total=False):
    """A client identity a workload may present with its assertion (or go without)."""

    client_id: str | None
    client_secret: str | None


class JwtBearerGrant(Grant):
    """RFC 7523 §2.1 with an assertion the workload already holds."""

    def __init__(self, assertion: AssertionSource, **client: Unpack[OptionalClient]) -> None:
        self.assertion = assertion
        self.client_id = client.get("client_id")
        self.client_secret = client.get("client_secret")

    def obtain(self, ctx: GrantContext) -> Flow[TokenSet]:
        assertion = _assertion(self.assertion)
        form = token_form(JWT_BEARER, ctx.resource, ctx.scopes, assertion=assertion)
        if self.client_id is None:
            response = yield from ctx.engine.post_form(ctx.as_meta.token_endpoint, form)
            if response.status_code != 200:
                raise refused(response, "the JWT bearer grant was refused")
            return ctx.engine.parse_token_response(response, dpop=False)
        client = secret_client(self.client_id, self.client_secret, ctx.as_meta)
        return (yield from ctx.engine.token_request(ctx.as_meta, form, client))


class IdJagSettings(TypedDict):
    """The user's IdP ID token (``id_token``: a string or a callable returning a fresh
    one), the IdP's token endpoint and how the client is known there (``idp_client_id``,
    ``idp_client_secret``), and the client at the MCP server's authorization server."""

    id_token: AssertionSource
    idp_token_endpoint: str
    client_id: str
    client_secret: NotRequired[str | None]
    idp_client_id: NotRequired[str | None]
    idp_client_secret: NotRequired[str | None]


class IdJagGrant(Grant):
    """Enterprise-managed authorization: exchange the user's IdP ID token for an ID-JAG at
    the IdP (RFC 8693), then present it at the MCP server's authorization server."""

    def __init__(self, **settings: Unpack[IdJagSettings]) -> None:
        self.id_token = settings["id_token"]
        self.idp_token_endpoint = settings["idp_token_endpoint"]
        self.client_id = settings["client_id"]
        self.client_secret = settings.get("client_secret")
        self.idp_client_id = settings.get("idp_client_id")
        self.idp_client_secret = settings.get("idp_client_secret")

    def existing_client(
        self, engine: OAuthEngine, as_meta: AuthServerMetadata
    ) -> ClientInfo | None:
        return secret_client(self.client_id, self.client_secret, as_meta)

    def obtain(self, ctx: GrantContext) -> Flow[TokenSet]:
        from .clientauth import apply_client_auth

        try:
            check_url(self.idp_token_endpoint, ctx.engine.policy)
        except SsrfBlocked as exc:
            raise DiscoveryError(f"IdP token endpoint refused: {exc}") from None
        form = exchange_form(
            _assertion(self.id_token),
            ID_TOKEN,
            ID_JAG,
            resource=ctx.resource,
            audience=ctx.as_meta.issuer,
            scopes=ctx.scopes,
        )
        headers: dict[str, str] = {}
        if self.idp_client_id is not None:
            method = "client_secret_basic" if self.idp_client_secret else "none"
            apply_client_auth(
                method,
                form,
                headers,
                client_id=self.idp_client_id,
                client_secret=self.idp_client_secret,
            )
        response = yield from ctx.engine.post_form(self.idp_token_endpoint, form, headers)
        if response.status_code != 200:
            raise refused(response, "the IdP refused the token exchange")
        data = json_body(response)
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            raise TokenError("the IdP's token exchange response has no ID-JAG")
        check_issued(data, ID_JAG, "the IdP")
        grant = token_form(JWT_BEARER, ctx.resource, ctx.scopes, assertion=data["access_token"])
        client = secret_client(self.client_id, self.client_secret, ctx.as_meta)
        return (yield from ctx.engine.token_request(ctx.as_meta, grant, client))


SubjectSource = Callable[[], str | None]


class TokenExchangeGrant(ClientCredentialsGrant):
    """RFC 8693 for a client acting for a caller (a gateway, an agent): the caller's token
    (``subject_token``, read from the source at each exchange) is traded at the MCP
    server's authorization server for an access token whose audience is that server
    (``resource``, and ``audience`` when the AS names its resources that way).  The client
    authenticates as in :class:`ClientCredentialsGrant`.  An answer that hands back the
    subject token itself is refused: the caller's token is never presented as is."""

    proactive = True

    def __init__(
        self,
        subject_token: SubjectSource,
        client_id: str,
        *,
        audience: str | None = None,
        subject_token_type: str = ACCESS_TOKEN,
        **credentials: Unpack[ClientCredentials],
    ) -> None:
        super().__init__(client_id, **credentials)
        self.subject_token = subject_token
        self.audience = audience
        self.subject_token_type = subject_token_type

    def obtain(self, ctx: GrantContext) -> Flow[TokenSet]:
        subject = self.subject_token()
        if not isinstance(subject, str) or not subject:
            raise AuthorizationError("no subject token to exchange (no caller's token here)")
        form = exchange_form(
            subject,
            self.subject_token_type,
            ACCESS_TOKEN,
            resource=ctx.resource,
            audience=self.audience,
            scopes=ctx.scopes,
        )
        tokens: TokenSet = yield from self._token_request(ctx, form, ACCESS_TOKEN)
        if secrets.compare_digest(tokens.access_token.encode(), subject.encode()):
            raise TokenError(
                f"{ctx.as_meta.issuer} answered the token exchange with the subject token "
                "itself; refusing to present a caller's token as is",
                "invalid_grant",
            )
        return tokens
