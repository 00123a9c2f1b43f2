"""The ``[auth]`` table of a gateway configuration (:mod:`.config`): static bearer tokens,
an OAuth 2.1 protected resource accepting one authorization server's JWTs, or the
gateway's own authorization server (:mod:`mcpkit.auth.server`)."""

from __future__ import annotations

import re
from typing import Any

from .config import MCP_PATH, AuthConfig, ConfigError

__all__ = ["AUTH_MODES", "parse_auth"]

AUTH_MODES = ("none", "bearer", "jwt", "authorization_server")
#: The ``[auth]`` keys of ``authorization_server`` mode beside the gateway's own
#: (``principal_claim``, ``groups_claim``, ``tool_scopes``).
_AS_KEYS = (
    "issuer",
    "state",
    "scopes",
    "required_scopes",
    "consent",
    "access_token_ttl_s",
    "refresh_token_ttl_s",
    "upstream",
)
_AS_MODE_KEYS = frozenset({"mode", "principal_claim", "groups_claim", "tool_scopes", *_AS_KEYS})


def parse_auth(data: dict[str, Any]) -> AuthConfig:
    """``[auth]``: ``mode`` (none, bearer, jwt or authorization_server) and what that mode
    reads; a key another mode reads is an error naming it."""
    mode = data.get("mode", "none")
    if mode not in AUTH_MODES:
        raise ConfigError("auth.mode must be none, bearer, jwt or authorization_server")
    tokens: dict[str, dict[str, Any]] = {}
    for token, who in (data.get("tokens") or {}).items():
        if isinstance(who, str):
            who = {"principal": who}
        if not isinstance(who, dict) or not isinstance(who.get("principal"), str):
            raise ConfigError(f"auth.tokens.{token[:4]}...: needs a principal")
        tokens[token] = {
            "principal": who["principal"],
            "groups": list(who.get("groups", [])),
        }
    if mode == "bearer" and not tokens:
        raise ConfigError("auth.mode = 'bearer' needs [auth.tokens]")
    return _parse_mode(data, mode, tokens)


def _parse_mode(data: dict[str, Any], mode: str, tokens: dict[str, dict[str, Any]]) -> AuthConfig:
    """What ``mode`` reads of ``[auth]``.  In ``jwt`` mode the gateway is an OAuth 2.1
    protected resource: it needs
    its canonical URL (``resource``) and the ``issuer`` whose tokens it accepts, because
    both go into the RFC 9728 metadata that clients discover from the 401."""
    if mode == "authorization_server":
        return _parse_authorization_server(data)
    misplaced = [k for k in ("state", "upstream", "required_scopes", "consent") if k in data]
    if misplaced:
        raise ConfigError(
            f"auth.{misplaced[0]} is read only with auth.mode = 'authorization_server'"
        )
    if mode != "jwt":
        return AuthConfig(mode=mode, tokens=tokens)
    issuer = data.get("issuer")
    if not isinstance(issuer, str) or not issuer:
        raise ConfigError("auth.mode = 'jwt' needs issuer (the authorization server's URL)")
    resource = data.get("resource")
    if resource is not None:
        resource = str(resource)
        if not re.match(r"^https?://[^/?#]+", resource) or "#" in resource:
            raise ConfigError(
                f"auth.resource must be the gateway's absolute http(s) URL, got {resource!r}"
            )
    audience = data.get("audience") or resource
    if resource is None and isinstance(audience, str) and re.match(r"^https?://", audience):
        resource = audience
    if resource is None:
        raise ConfigError(
            "auth.mode = 'jwt' needs resource (the gateway's URL, e.g. "
            "'https://gw.example.com/mcp'; also the default token audience)"
        )
    servers = data.get("authorization_servers", [issuer])
    if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
        raise ConfigError("auth.authorization_servers must be a list of issuer URLs")
    scopes = data.get("scopes", [])
    if isinstance(scopes, str):
        scopes = scopes.split()
    tool_scopes: dict[str, tuple[str, ...]] = {}
    for tool, needed in (data.get("tool_scopes") or {}).items():
        needed = needed.split() if isinstance(needed, str) else needed
        if not isinstance(needed, list) or not all(isinstance(n, str) for n in needed):
            raise ConfigError(f"auth.tool_scopes.{tool} must be a list of scopes")
        tool_scopes[tool] = tuple(needed)
    return AuthConfig(
        mode=mode,
        tokens=tokens,
        jwks_url=data.get("jwks_url"),
        jwks_file=data.get("jwks_file"),
        issuer=issuer,
        audience=str(audience),
        principal_claim=data.get("principal_claim", "sub"),
        groups_claim=data.get("groups_claim", "groups"),
        resource=resource,
        authorization_servers=tuple(servers),
        scopes=tuple(scopes),
        tool_scopes=tool_scopes,
        introspection_endpoint=data.get("introspection_endpoint"),
        introspection_client_id=data.get("introspection_client_id"),
        introspection_client_secret=data.get("introspection_client_secret"),
    )


def _parse_authorization_server(data: dict[str, Any]) -> AuthConfig:
    """``[auth] mode = "authorization_server"``: the gateway runs the authorization server
    its clients sign in with (users signing in at ``[auth.upstream]``), and accepts only
    that server's tokens, issued for ``{issuer}/mcp``.  The settings are checked here by
    building the server once (no I/O: its state opens on first use)."""
    from ..auth.server.config import build_authorization_server

    foreign = sorted(set(data) - _AS_MODE_KEYS)
    if foreign:
        raise ConfigError(
            f"auth.{foreign[0]} is not read with auth.mode = 'authorization_server' "
            f"(its keys: {', '.join(sorted(_AS_MODE_KEYS - {'mode'}))})"
        )
    settings = {k: data[k] for k in _AS_KEYS if k in data}
    if isinstance(settings.get("scopes"), str):
        settings["scopes"] = settings["scopes"].split()
    for key in ("issuer", "upstream"):
        if key not in settings:
            raise ConfigError(f"auth.mode = 'authorization_server' needs auth.{key}")
    authz = build_authorization_server(settings, mcp_path=MCP_PATH, where="auth")
    tool_scopes: dict[str, tuple[str, ...]] = {}
    for tool, needed in (data.get("tool_scopes") or {}).items():
        tool_scopes[tool] = tuple(needed.split() if isinstance(needed, str) else needed)
    return AuthConfig(
        mode="authorization_server",
        issuer=authz.issuer,
        audience=authz.resources[0],
        principal_claim=data.get("principal_claim", "sub"),
        groups_claim=data.get("groups_claim", "groups"),
        resource=authz.resources[0],
        authorization_servers=(authz.issuer,),
        scopes=tuple(authz.required_scopes),
        tool_scopes=tool_scopes,
        authorization_server=settings,
    )
