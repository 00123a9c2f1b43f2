"""How a token is obtained once the authorization server is known.

* :class:`AuthorizationCodeGrant` — OAuth 2.1 authorization code with PKCE S256 (refused
  when the server does not advertise S256), RFC 8707 ``resource``, RFC 9207 ``iss`` checked
  exactly before the code is redeemed; the client is registered by pre-registration, then
  a Client ID Metadata Document, then Dynamic Client Registration (credentials kept per
  issuer).
* :class:`ClientCredentialsGrant` — machine clients with ``client_secret_basic``/``post``
  or ``private_key_jwt``.
* :class:`JwtBearerGrant` — RFC 7523 JWT bearer (workload identity federation): the
  assertion comes from the environment; errors are surfaced, never retried.
* :class:`IdJagGrant` — enterprise-managed authorization (ID-JAG): RFC 8693 token exchange
  at the enterprise IdP, then a JWT bearer grant at the MCP server's authorization server.
* :class:`TokenExchangeGrant` — acting for someone else (RFC 8693): a token the caller
  holds is exchanged at the MCP server's authorization server for one whose audience is
  that server.  Both exchanges build their request with :func:`exchange_form` and check
  the answer with :func:`check_issued`: one implementation of the RFC.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict, Unpack
from urllib.parse import urlencode, urlsplit, urlunsplit

from ..urls import is_loopback_host
from .browser import RedirectHandler, check_browser_url
from .clientauth import choose_auth_method, load_private_key
from .errors import (
    AuthorizationError,
    DiscoveryError,
    SsrfBlocked,
    TokenError,
    UntrustedAuthorizationServer,
)
from .flow import Fetch, Flow, GrantContext, OAuthEngine, UserAuthorization, json_body, refused
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


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-]
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _same_url(a: str, b: str) -> bool:
    """Whether two issuer URLs are the same one (a trailing slash aside)."""
    return a.rstrip("/") == b.rstrip("/")


def _with_query(url: str, params: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    query = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def _default_alg(key: Any) -> str:
    kty = getattr(key, "key_type", None)
    if kty == "RSA":
        return "RS256"
    if kty == "OKP":
        return "EdDSA"
    curve = getattr(key, "curve_name", None) or "P-256"
    return {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}.get(str(curve), "ES256")


def _secret_client(
    client_id: str, client_secret: str | None, as_meta: AuthServerMetadata, **extra: Any
) -> ClientInfo:
    """A client known by id (and maybe secret): the method the AS and the secret allow."""
    method = choose_auth_method(
        as_meta.token_endpoint_auth_methods_supported, has_secret=client_secret is not None
    )
    return ClientInfo(client_id, client_secret, method, as_meta.issuer, **extra)


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
        return _secret_client(
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
            if _same_url(server, self.issuer):
                return server
        raise UntrustedAuthorizationServer(
            f"the resource names the authorization server {', '.join(servers)}, not the "
            f"pinned issuer {self.issuer}; nothing was sent to it",
            expected=self.issuer,
            found=", ".join(servers),
        )

    def check_destination(self, as_meta: AuthServerMetadata) -> None:
        if self.issuer is not None and not _same_url(as_meta.issuer, self.issuer):
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
        client = _secret_client(self.client_id, self.client_secret, ctx.as_meta)
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
        return _secret_client(self.client_id, self.client_secret, as_meta)

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
        client = _secret_client(self.client_id, self.client_secret, ctx.as_meta)
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
