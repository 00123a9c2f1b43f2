"""The authorization server's settings as typed tables (pydantic only, no crypto): what
``mcpkit serve --authorization-server FILE`` reads, and the gateway's ``[auth]`` table in
``authorization_server`` mode.  Strict: an unknown key is an error naming it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["AuthorizationServerSettings", "UpstreamSettings"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UpstreamSettings(_Strict):
    provider: Literal["oidc", "entra", "google", "github", "keycloak", "auth0", "okta"]
    client_id: str
    client_secret: str | None = None
    client_secret_env: str | None = None
    issuer: str | None = None
    scopes: list[str] | None = None
    tenant: str | None = None
    hosted_domain: str | None = None
    base_url: str | None = None
    api_url: str | None = None
    realm: str | None = None
    domain: str | None = None
    groups_claim: str | None = None
    authorization_server: str | None = None
    token_auth: Literal["client_secret_post", "client_secret_basic"] | None = None


class AuthorizationServerSettings(_Strict):
    issuer: str
    state: str = "sqlite:///.mcpkit/authserver.db"
    scopes: list[str] = ["mcp"]
    required_scopes: list[str] = []
    consent: bool = True
    access_token_ttl_s: int = 3600
    refresh_token_ttl_s: int = 30 * 86400
    upstream: UpstreamSettings
