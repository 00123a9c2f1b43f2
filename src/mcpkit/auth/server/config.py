"""The authorization server from a small TOML file (``mcpkit serve --authorization-server``).

::

    issuer = "https://mcp.example.com"        # this server's public base URL
    state = "sqlite:///.mcpkit/authserver.db"  # or redis://... for replicas
    scopes = ["mcp"]

    [upstream]
    provider = "github"                        # oidc, entra, google, github, keycloak, auth0, okta
    client_id = "Iv1.0123456789"
    client_secret_env = "GITHUB_CLIENT_SECRET" # the secret is read from the environment

Provider settings: ``issuer`` (oidc), ``tenant`` (entra), ``hosted_domain`` (google),
``base_url`` and ``realm`` (keycloak), ``domain`` (auth0, okta), ``groups_claim`` (auth0),
``authorization_server`` (okta), ``base_url`` and ``api_url`` (github, for Enterprise
Server); for any, ``token_auth`` (``client_secret_post`` or ``client_secret_basic``).
The file is strict: an unknown or misplaced key is an error naming it.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from ...types.errors import ConfigError
from ...types.strict import check_document
from .server import AuthorizationServer
from .settings import AuthorizationServerSettings, UpstreamSettings
from .upstream import OidcUpstream, Upstream, auth0, entra, github, google, keycloak, okta

__all__ = ["build_authorization_server", "load_authorization_server"]


def load_authorization_server(path: str | Path, *, mcp_path: str = "/mcp") -> AuthorizationServer:
    """The :class:`AuthorizationServer` a TOML file describes; :class:`ConfigError` naming
    the file and the key for any mistake."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{file}: {exc}") from None
    try:
        return build_authorization_server(data, mcp_path=mcp_path)
    except ConfigError as exc:
        raise ConfigError(f"{file}: {exc}") from None


def build_authorization_server(
    data: dict[str, Any], *, mcp_path: str = "/mcp", where: str = ""
) -> AuthorizationServer:
    """The :class:`AuthorizationServer` the settings ``data`` describe (the file's keys, as
    a table); :class:`ConfigError` naming the key (under ``where``, e.g. ``auth``) for any
    mistake."""
    try:
        check_document(AuthorizationServerSettings, data, toml=True)
        settings = AuthorizationServerSettings.model_validate(data)
        upstream = _upstream(settings.upstream)
        return AuthorizationServer(
            settings.issuer,
            upstream,
            path=mcp_path,
            scopes=settings.scopes,
            required_scopes=settings.required_scopes,
            state=settings.state,
            consent=settings.consent,
            access_token_ttl_s=settings.access_token_ttl_s,
            refresh_token_ttl_s=settings.refresh_token_ttl_s,
        )
    except (ConfigError, ValueError) as exc:
        message = str(exc)
        raise ConfigError(f"{where}: {message}" if where else message) from None


def _secret(settings: UpstreamSettings) -> str:
    if settings.client_secret is not None and settings.client_secret_env is not None:
        raise ConfigError("upstream: give client_secret or client_secret_env, not both")
    if settings.client_secret_env is not None:
        value = os.environ.get(settings.client_secret_env)
        if not value:
            raise ConfigError(
                f"upstream.client_secret_env: environment variable "
                f"{settings.client_secret_env} is not set"
            )
        return value
    if settings.client_secret is None:
        raise ConfigError("upstream: client_secret_env (or client_secret) is required")
    return settings.client_secret


def _need(settings: UpstreamSettings, *names: str) -> list[str]:
    values = [getattr(settings, name) for name in names]
    missing = [n for n, v in zip(names, values, strict=True) if v is None]
    if missing:
        raise ConfigError(f"upstream: provider {settings.provider!r} needs {', '.join(missing)}")
    return [str(v) for v in values]


def _upstream(s: UpstreamSettings) -> Upstream:
    upstream = _provider(s)
    if s.token_auth is not None:
        upstream.token_auth = s.token_auth
    return upstream


def _provider(s: UpstreamSettings) -> Upstream:
    secret = _secret(s)
    if s.provider == "oidc":
        (issuer,) = _need(s, "issuer")
        oidc = OidcUpstream(client_id=s.client_id, client_secret=secret, issuer=issuer)
        if s.scopes:
            oidc.scopes = tuple(s.scopes)
        return oidc
    if s.provider == "entra":
        (tenant,) = _need(s, "tenant")
        return entra(tenant, s.client_id, secret, scopes=s.scopes or ())
    if s.provider == "google":
        return google(s.client_id, secret, hosted_domain=s.hosted_domain)
    if s.provider == "github":
        return github(
            s.client_id,
            secret,
            base_url=s.base_url or "https://github.com",
            api_url=s.api_url or "https://api.github.com",
        )
    if s.provider == "keycloak":
        base_url, realm = _need(s, "base_url", "realm")
        return keycloak(base_url, realm, s.client_id, secret)
    if s.provider == "auth0":
        (domain,) = _need(s, "domain")
        return auth0(domain, s.client_id, secret, groups_claim=s.groups_claim)
    (domain,) = _need(s, "domain")
    return okta(
        domain, s.client_id, secret, authorization_server=s.authorization_server or "default"
    )
