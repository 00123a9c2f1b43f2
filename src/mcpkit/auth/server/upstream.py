"""Upstream identity providers: where the authorization server's users sign in.

The server holds one fixed, pre-registered client at the provider (``client_id``,
``client_secret``, its redirect URI ``{issuer}/oauth/callback``).  It sends the user there
with its own ``state``, ``nonce`` and PKCE, takes the code back, exchanges it, and keeps
only an :class:`Identity`: upstream tokens never leave this module, and never reach an MCP
client.

* :class:`OidcUpstream`: any OpenID Connect provider, by discovery; the ID token is checked
  with joserfc (signature against the provider's JWKS, ``iss``, ``aud``, ``exp``,
  ``nonce``).
* :class:`GitHubUpstream`: OAuth without OIDC; the user comes from the ``/user`` API.
* Presets (:func:`entra`, :func:`google`, :func:`github`, :func:`keycloak`, :func:`auth0`,
  :func:`okta`): the URLs and claim quirks of each provider, as data and small hooks.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx

from ...types.extras import require
from ..client.clientauth import basic_authorization
from ..urls import require_secure_url

# Public names: the package's ``__all__`` (mcpkit.auth.server) is the one list.


class UpstreamError(Exception):
    """The identity provider refused the sign-in or answered something unusable."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who signed in upstream: what the server's own tokens carry as claims."""

    subject: str
    email: str | None = None
    name: str | None = None
    groups: tuple[str, ...] = ()

    def claims(self) -> dict[str, Any]:
        """The identity as JWT claims (``sub``, and ``email``/``name``/``groups`` when known)."""
        out: dict[str, Any] = {"sub": self.subject}
        if self.email:
            out["email"] = self.email
        if self.name:
            out["name"] = self.name
        if self.groups:
            out["groups"] = list(self.groups)
        return out


#: Turns the provider's claims (ID token, merged with userinfo when fetched) into an identity.
ClaimsMapper = Callable[[Mapping[str, Any]], Identity]


def default_identity(claims: Mapping[str, Any]) -> Identity:
    """``sub``, ``email``, ``name`` and ``groups`` as most OpenID providers name them."""
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise UpstreamError("the identity provider named no subject")
    email = claims.get("email")
    name = claims.get("name") or claims.get("preferred_username")
    groups = claims.get("groups")
    return Identity(
        subject=sub,
        email=email if isinstance(email, str) else None,
        name=name if isinstance(name, str) else None,
        groups=tuple(str(g) for g in groups) if isinstance(groups, list) else (),
    )


@dataclass(frozen=True, slots=True)
class Transaction:
    """One trip to the provider: what the callback needs to finish it."""

    state: str
    nonce: str
    code_verifier: str

    @classmethod
    def new(cls) -> Transaction:
        return cls(secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48))

    @property
    def code_challenge(self) -> str:
        digest = hashlib.sha256(self.code_verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass
class Upstream:
    """What every provider shares: the fixed client and the authorization-code exchange."""

    client_id: str
    client_secret: str | None = None
    scopes: Sequence[str] = ()
    #: Extra query parameters for the provider's authorization endpoint.
    authorize_params: Mapping[str, str] = field(default_factory=dict)
    name: str = "identity provider"
    #: How the client secret reaches the token endpoint: ``client_secret_post`` (in the
    #: form) or ``client_secret_basic`` (HTTP Basic), as registered at the provider.
    token_auth: str = "client_secret_post"

    async def authorization_url(self, redirect_uri: str, tx: Transaction) -> str:
        """Where to send the user to sign in (PKCE S256, our ``state`` and ``nonce``)."""
        endpoint = await self._authorization_endpoint()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.scopes),
            "state": tx.state,
            "nonce": tx.nonce,
            "code_challenge": tx.code_challenge,
            "code_challenge_method": "S256",
            **self.authorize_params,
        }
        separator = "&" if "?" in endpoint else "?"
        return f"{endpoint}{separator}{urlencode(params)}"

    async def identify(self, code: str, redirect_uri: str, tx: Transaction) -> Identity:
        """Exchange ``code`` and say who signed in."""
        raise NotImplementedError

    async def _authorization_endpoint(self) -> str:
        raise NotImplementedError

    async def _token_request(
        self, http: httpx.AsyncClient, endpoint: str, form: dict[str, str]
    ) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        form = {**form, "client_id": self.client_id}
        if self.client_secret is not None and self.token_auth == "client_secret_basic":
            headers["Authorization"] = basic_authorization(self.client_id, self.client_secret)
        elif self.client_secret is not None:
            form["client_secret"] = self.client_secret
        try:
            response = await http.post(endpoint, data=form, headers=headers)
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise UpstreamError(f"the {self.name} token request failed: {exc}") from None
        # GitHub answers 200 with an ``error`` member; others 400.
        if response.status_code != 200 or not isinstance(data, dict) or "error" in data:
            error = data.get("error") if isinstance(data, dict) else None
            raise UpstreamError(
                f"the {self.name} refused the code ({error or response.status_code})"
            )
        return data


def _http() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=10.0, follow_redirects=False, trust_env=False)


@dataclass
class OidcUpstream(Upstream):
    """An OpenID Connect provider, found by discovery
    (``{issuer}/.well-known/openid-configuration``)."""

    issuer: str = ""
    scopes: Sequence[str] = ("openid", "email", "profile")
    #: Fetch the userinfo endpoint too (for claims the ID token leaves out).
    userinfo: bool = False
    #: The issuer the ID token must name, when it differs from the discovery URL's
    #: (a multi-tenant endpoint); a callable gets the token's claims.
    expected_issuer: str | Callable[[Mapping[str, Any]], bool] | None = None
    map_claims: ClaimsMapper = default_identity
    name: str = "OpenID provider"
    _metadata: dict[str, Any] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.issuer:
            raise ValueError("OidcUpstream needs the provider's issuer URL")
        require_secure_url(self.issuer, "upstream issuer")

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (fetched once)."""
        if self._metadata is None:
            url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
            async with _http() as http:
                try:
                    response = await http.get(url, headers={"Accept": "application/json"})
                    data = response.json()
                except (httpx.HTTPError, ValueError) as exc:
                    raise UpstreamError(f"cannot discover the {self.name}: {exc}") from None
            if response.status_code != 200 or not isinstance(data, dict):
                raise UpstreamError(
                    f"cannot discover the {self.name} (HTTP {response.status_code})"
                )
            for member in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(data.get(member), str):
                    raise UpstreamError(f"the {self.name}'s discovery lacks {member}")
                require_secure_url(data[member], member)
            self._metadata = data
        return self._metadata

    async def _authorization_endpoint(self) -> str:
        return str((await self.metadata())["authorization_endpoint"])

    async def identify(self, code: str, redirect_uri: str, tx: Transaction) -> Identity:
        """Exchange ``code`` and read the user from the validated ID token."""
        meta = await self.metadata()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": tx.code_verifier,
        }
        async with _http() as http:
            tokens = await self._token_request(http, meta["token_endpoint"], form)
            id_token = tokens.get("id_token")
            if not isinstance(id_token, str):
                raise UpstreamError(f"the {self.name} returned no ID token")
            jwks = await self._jwks(http, meta["jwks_uri"])
            claims = self._validate(id_token, jwks, tx.nonce, meta.get("issuer", self.issuer))
            if self.userinfo and isinstance(meta.get("userinfo_endpoint"), str):
                claims = {**await self._userinfo(http, meta, tokens), **claims}
        return self.map_claims(claims)

    async def _jwks(self, http: httpx.AsyncClient, uri: str) -> Any:
        jwk = require("joserfc.jwk", "authserver", "ID token validation")
        try:
            response = await http.get(uri, headers={"Accept": "application/json"})
            return jwk.KeySet.import_key_set(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            raise UpstreamError(f"cannot load the {self.name}'s keys: {exc}") from None

    def _validate(self, id_token: str, jwks: Any, nonce: str, issuer: str) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import JoseError

        try:
            token = jwt.decode(id_token, jwks, algorithms=["RS256", "ES256", "PS256", "EdDSA"])
        except (JoseError, ValueError) as exc:
            raise UpstreamError(f"the ID token does not verify: {exc}") from None
        claims = dict(token.claims)
        registry = jwt.JWTClaimsRegistry(
            leeway=60,
            aud={"essential": True, "value": self.client_id},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise UpstreamError(f"the ID token is not acceptable: {exc}") from None
        if not self._issuer_ok(claims, issuer):
            raise UpstreamError(f"the ID token names another issuer: {claims.get('iss')!r}")
        return claims

    def _issuer_ok(self, claims: Mapping[str, Any], discovered: str) -> bool:
        expected = self.expected_issuer
        if callable(expected):
            return expected(claims)
        return claims.get("iss") == (expected or discovered)

    async def _userinfo(
        self, http: httpx.AsyncClient, meta: Mapping[str, Any], tokens: Mapping[str, Any]
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {tokens.get('access_token', '')}"}
        try:
            response = await http.get(meta["userinfo_endpoint"], headers=headers)
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise UpstreamError(f"the {self.name}'s userinfo failed: {exc}") from None
        return data if isinstance(data, dict) else {}


@dataclass
class GitHubUpstream(Upstream):
    """GitHub (or GitHub Enterprise Server): OAuth without OpenID Connect.  The user is read
    from ``{api_url}/user`` (``id`` becomes the subject, ``login`` the name), the primary
    verified address from ``/user/emails`` when ``/user`` shows none, and the user's
    organizations (``/user/orgs``, scope ``read:org``) become ``groups``."""

    base_url: str = "https://github.com"
    api_url: str = "https://api.github.com"
    scopes: Sequence[str] = ("read:user", "user:email", "read:org")
    name: str = "GitHub"

    def __post_init__(self) -> None:
        require_secure_url(self.base_url, "GitHub URL")
        require_secure_url(self.api_url, "GitHub API URL")

    async def _authorization_endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/login/oauth/authorize"

    async def identify(self, code: str, redirect_uri: str, tx: Transaction) -> Identity:
        """Exchange ``code`` and read the user from GitHub's API."""
        endpoint = self.base_url.rstrip("/") + "/login/oauth/access_token"
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": tx.code_verifier,
        }
        async with _http() as http:
            tokens = await self._token_request(http, endpoint, form)
            token = tokens.get("access_token")
            if not isinstance(token, str):
                raise UpstreamError("GitHub returned no access token")
            user = await self._api(http, token, "/user")
            if not isinstance(user, dict) or not isinstance(user.get("id"), int):
                raise UpstreamError("GitHub's /user named no user id")
            email = user.get("email") or await self._primary_email(http, token)
            orgs = await self._api(http, token, "/user/orgs", optional=True)
        groups = tuple(o["login"] for o in orgs or () if isinstance(o, dict) and "login" in o)
        return Identity(
            subject=str(user["id"]),
            email=email if isinstance(email, str) else None,
            name=user.get("login") if isinstance(user.get("login"), str) else None,
            groups=groups,
        )

    async def _api(
        self, http: httpx.AsyncClient, token: str, path: str, *, optional: bool = False
    ) -> Any:
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }
        try:
            response = await http.get(self.api_url.rstrip("/") + path, headers=headers)
            if response.status_code != 200:
                if optional:
                    return None
                raise UpstreamError(f"GitHub's {path} answered HTTP {response.status_code}")
            return response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise UpstreamError(f"GitHub's {path} failed: {exc}") from None

    async def _primary_email(self, http: httpx.AsyncClient, token: str) -> str | None:
        emails = await self._api(http, token, "/user/emails", optional=True)
        for item in emails or ():
            if isinstance(item, dict) and item.get("primary") and item.get("verified"):
                email = item.get("email")
                return email if isinstance(email, str) else None
        return None


# --------------------------------------------------------------------------- presets


def _entra_identity(claims: Mapping[str, Any]) -> Identity:
    # ``oid`` is the user's id across every app of the tenant (``sub`` is per app); the
    # address is ``email`` when the tenant sets it, else the sign-in name.
    subject = claims.get("oid") or claims.get("sub")
    email = claims.get("email") or claims.get("preferred_username") or claims.get("upn")
    return default_identity({**claims, "sub": subject, "email": email})


def entra(
    tenant: str, client_id: str, client_secret: str, *, scopes: Sequence[str] = ()
) -> OidcUpstream:
    """Microsoft Entra ID (v2.0 endpoints) of ``tenant`` (a tenant id or domain;
    ``organizations`` or ``common`` for multi-tenant apps, whose ID tokens name each user's
    own tenant as issuer).  ``groups`` come from the token's ``groups`` claim (enable it in
    the app's *Token configuration*); the subject is the user's ``oid``."""
    issuer = f"https://login.microsoftonline.com/{tenant}/v2.0"
    multi = tenant in ("common", "organizations", "consumers")

    def issuer_ok(claims: Mapping[str, Any]) -> bool:
        iss, tid = claims.get("iss"), claims.get("tid")
        return isinstance(tid, str) and iss == f"https://login.microsoftonline.com/{tid}/v2.0"

    return OidcUpstream(
        client_id=client_id,
        client_secret=client_secret,
        issuer=issuer,
        scopes=("openid", "profile", "email", *scopes),
        expected_issuer=issuer_ok if multi else None,
        map_claims=_entra_identity,
        name="Entra ID",
    )


def google(client_id: str, client_secret: str, *, hosted_domain: str | None = None) -> OidcUpstream:
    """Google accounts.  ``hosted_domain`` keeps sign-in to one Workspace domain (the
    ``hd`` parameter; the ID token's ``hd`` claim is checked too).  Google has no groups
    claim."""

    def identity(claims: Mapping[str, Any]) -> Identity:
        if hosted_domain is not None and claims.get("hd") != hosted_domain:
            raise UpstreamError(f"the account is not in the {hosted_domain} domain")
        return default_identity(claims)

    params = {"hd": hosted_domain} if hosted_domain else {}
    return OidcUpstream(
        client_id=client_id,
        client_secret=client_secret,
        issuer="https://accounts.google.com",
        authorize_params=params,
        map_claims=identity,
        name="Google",
    )


def github(
    client_id: str,
    client_secret: str,
    *,
    base_url: str = "https://github.com",
    api_url: str = "https://api.github.com",
) -> GitHubUpstream:
    """GitHub (an OAuth App or a GitHub App's OAuth credentials).  For GitHub Enterprise
    Server, ``base_url="https://ghe.example.com"`` and ``api_url=".../api/v3"``."""
    return GitHubUpstream(
        client_id=client_id, client_secret=client_secret, base_url=base_url, api_url=api_url
    )


def keycloak(base_url: str, realm: str, client_id: str, client_secret: str) -> OidcUpstream:
    """A Keycloak realm (``{base_url}/realms/{realm}``).  ``groups`` come from a *Group
    Membership* mapper named ``groups`` on the client (full path off)."""
    return OidcUpstream(
        client_id=client_id,
        client_secret=client_secret,
        issuer=f"{base_url.rstrip('/')}/realms/{realm}",
        name="Keycloak",
    )


def auth0(
    domain: str, client_id: str, client_secret: str, *, groups_claim: str | None = None
) -> OidcUpstream:
    """An Auth0 tenant (``domain`` like ``tenant.eu.auth0.com`` or a custom domain; its
    issuer ends with ``/``).  Auth0 puts roles or groups only in a namespaced claim an
    Action adds: name it in ``groups_claim`` (e.g. ``https://example.com/groups``)."""

    def identity(claims: Mapping[str, Any]) -> Identity:
        if groups_claim is not None:
            claims = {**claims, "groups": claims.get(groups_claim)}
        return default_identity(claims)

    return OidcUpstream(
        client_id=client_id,
        client_secret=client_secret,
        issuer=f"https://{domain}/",
        map_claims=identity,
        name="Auth0",
    )


def okta(
    domain: str, client_id: str, client_secret: str, *, authorization_server: str | None = "default"
) -> OidcUpstream:
    """An Okta org (``domain`` like ``example.okta.com``), through a custom authorization
    server (``default`` unless named; ``None`` for the org server).  ``groups`` need a
    *groups* claim on the authorization server (or the app's *Groups claim filter*).  The
    secret goes by HTTP Basic, Okta's default for web apps."""
    path = f"/oauth2/{authorization_server}" if authorization_server else ""
    # The org server knows a ``groups`` scope; a custom server sends the claim by its rule.
    groups = () if authorization_server else ("groups",)
    return OidcUpstream(
        client_id=client_id,
        client_secret=client_secret,
        issuer=f"https://{domain}{path}",
        scopes=("openid", "email", "profile", *groups),
        token_auth="client_secret_basic",
        name="Okta",
    )
