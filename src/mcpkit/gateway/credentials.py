"""How the gateway connects an ``[[upstream]]`` (:func:`connect`, a
:mod:`mcpkit.compose.upstream` connection), and the credentials it presents *to* the
upstream (never the front caller's token as is).

Static headers are sent as configured.  ``[upstream.auth]`` (or its older spelling
``[upstream.oauth]``) chooses a ``kind``, each an ``httpx.Auth`` of ``mcpkit.auth.client``:

* ``client_credentials`` — :class:`~mcpkit.auth.client.ClientCredentialsAuth`: on the
  upstream's first 401 it reads the upstream's protected-resource metadata, discovers the
  authorization server and obtains a token with the client-credentials grant (secret or
  ``private_key_jwt``) for the RFC 8707 ``resource`` of the upstream; the token is cached
  and renewed when it expires or the upstream refuses it.
* ``token_exchange`` — :class:`~mcpkit.auth.client.TokenExchangeAuth`: a call made for a
  caller carries a token the authorization server issued in exchange for the caller's
  own (RFC 8693: ``subject_token`` = the caller's access token, ``resource`` = the
  upstream), cached per caller (a hash of the caller's token) until it expires.  What
  the gateway does for nobody in particular — connecting, listing (lists are cached and
  shared by every caller, so they must not be one caller's view), health checks —
  carries the gateway's own client-credentials token.

Either object lives as long as the upstream's entry, so a reconnect (or a restarted
upstream) reuses the cached tokens.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..compose.replicas import AnyUpstream, make_upstream
from ..compose.upstream import OnChange
from ..types.errors import INTERNAL_ERROR, McpError
from .config import ConfigError, UpstreamConfig, UpstreamOAuth

if TYPE_CHECKING:
    import httpx

    from ..auth.client import OAuthAuth
    from ..auth.client.errors import UntrustedAuthorizationServer
    from ..server.context import Context

log = logging.getLogger("mcpkit.gateway")

#: The access token of the caller an upstream request is made for (None: the gateway's
#: own request).  Set around a front request's routing; read by ``token_exchange``.
acting_for: ContextVar[str | None] = ContextVar("mcpkit_gateway_acting_for", default=None)
#: The front request an upstream request is made for (None: the gateway's own request).
#: Set with ``acting_for``; read by ``per_user`` (the caller's own upstream account).
acting_call: ContextVar[Context | None] = ContextVar("mcpkit_gateway_acting_call", default=None)
KINDS = ("client_credentials", "token_exchange", "per_user")
#: The front's refusal code (see .server: FORBIDDEN).
FORBIDDEN = -31003


@contextlib.contextmanager
def own_identity() -> Iterator[None]:
    """Requests made inside are the gateway's own, whoever's request caused them."""
    token = acting_for.set(None)
    call = acting_call.set(None)
    try:
        yield
    finally:
        acting_call.reset(call)
        acting_for.reset(token)


def connect(config: UpstreamConfig, on_change: OnChange, *, cache: bool) -> AnyUpstream:
    """The connection (or replica set) of one ``[[upstream]]``: its URL(s), command or
    (``kind = "openapi"``) the REST API as an MCP server in this process, reached through
    an in-memory client so it is routed, policed, cached and bridged like any other."""
    target: Any = list(config.replicas) or config.url or list(config.command)
    if config.kind == "openapi":
        from ..compose.openapi import from_openapi, operator_spec_policy

        assert config.spec is not None  # (the config checks it)
        is_url = config.spec.startswith(("http://", "https://"))
        target = from_openapi(
            config.spec,
            base_url=config.base_url,
            headers=dict(config.headers),
            name=config.name,
            timeout=config.timeout_s,
            spec_policy=operator_spec_policy(config.spec) if is_url else None,
        )
    era = config.era
    auth: httpx.Auth | None = None
    if config.oauth is not None and config.url and config.oauth.kind == "per_user":
        auth = per_user_auth(config, config.oauth, config.url)
    elif config.oauth is not None and config.url:
        auth = upstream_auth(config.oauth, config.url)
        if config.oauth.kind in ("token_exchange", "per_user"):  # a legacy session has one owner
            era = "modern"
    return make_upstream(
        config.name,
        target,
        on_change=on_change,
        timeout=config.timeout_s,
        era=era,
        headers=config.headers,
        env=config.env,
        health_interval=config.health_interval,
        cache=cache,
        auth=auth,
        auth_error=credentials_error if auth is not None else None,
        shared=own_identity,
        prefix=config.prefix,
        source=config,
    )


def read_private_key(path: str) -> Any:
    """A ``private_key_jwt`` signing key from a PEM file or a JWK (JSON) file, loaded
    (and so checked) by ``mcpkit.auth.client``."""
    from ..auth.client.clientauth import load_private_key

    text = Path(path).read_text()
    key = load_private_key(json.loads(text) if text.lstrip().startswith("{") else text)
    # joserfc imports any other text as a symmetric ("oct") key: refuse it here rather
    # than sign nothing useful at the first connection.
    if getattr(key, "key_type", None) not in ("RSA", "EC", "OKP") or not key.is_private:
        raise ValueError("not a private RSA, EC or OKP key (PEM or JWK)")
    return key


def upstream_auth(oauth: UpstreamOAuth, url: str) -> OAuthAuth:
    """The ``httpx.Auth`` for one upstream (needs the ``auth`` extra: joserfc)."""
    from ..auth.client import (
        ClientCredentialsAuth,
        InMemoryTokenStore,
        TokenExchangeAuth,
        UrlPolicy,
    )

    key = read_private_key(oauth.private_key_file) if oauth.private_key_file else None
    policy = UrlPolicy.local_development() if oauth.allow_loopback else UrlPolicy()
    options: dict[str, Any] = {
        "client_secret": oauth.client_secret,
        "private_key": key,
        "server_url": url,
        "store": InMemoryTokenStore(),
        "policy": policy,
        "scopes": list(oauth.scopes) or None,
        "issuer": oauth.issuer,
        "token_endpoint": oauth.token_endpoint,
    }
    if oauth.kind == "token_exchange":
        subject = acting_for.get
        return TokenExchangeAuth(subject, oauth.client_id, audience=oauth.audience, **options)
    return ClientCredentialsAuth(oauth.client_id, **options)


def per_user_auth(config: UpstreamConfig, oauth: UpstreamOAuth, url: str) -> httpx.Auth:
    """``per_user``: each caller's own account (:mod:`.connect`); the gateway's own
    requests carry its client-credentials token when it has a ``client_secret``."""
    from .connect import PerUserAuth

    own = None
    if oauth.client_secret is not None or oauth.private_key_file is not None:
        own = upstream_auth(replace(oauth, kind="client_credentials"), url)
    return PerUserAuth(config, acting_call.get, own)


def credentials_error(upstream: str, exc: Exception) -> McpError | None:
    """An OAuth failure while calling ``upstream`` as the front caller's error (None: not
    one).  A refusal at the token endpoint (e.g. the caller may not use that upstream)
    is a Forbidden naming the OAuth error; anything else an internal error."""
    from ..auth.client.errors import OAuthError, TokenError, UntrustedAuthorizationServer

    if isinstance(exc, UntrustedAuthorizationServer):
        return untrusted_server(upstream, exc)
    if isinstance(exc, TokenError):
        return McpError(
            FORBIDDEN,
            f"Forbidden: the authorization server would not issue a token for upstream "
            f"{upstream!r}: {exc}",
            {"upstream": upstream, "oauthError": exc.error},
        )
    if isinstance(exc, OAuthError):
        return McpError(
            INTERNAL_ERROR,
            f"Upstream {upstream!r}: no credentials could be obtained: {exc}",
            {"upstream": upstream},
        )
    return None


class CredentialsWithheld(McpError):
    """A call refused because the upstream pointed its credentials elsewhere: the
    caller's error, and ``outcome`` the audit line's."""

    outcome = "credentials_withheld"


def untrusted_server(upstream: str, exc: UntrustedAuthorizationServer) -> McpError:
    """The caller's error (and one warning) for an upstream whose metadata named an
    authorization server or token endpoint other than the pinned one.  Only URLs are
    named: no credential, no token."""
    log.warning(
        "upstream %r names authorization server %s, not the pinned %s: no credentials or "
        "caller token were sent",
        upstream,
        exc.found,
        exc.expected,
    )
    return CredentialsWithheld(
        INTERNAL_ERROR,
        f"Upstream {upstream!r} asks for credentials from {exc.found}, not from the "
        f"configured authorization server {exc.expected}; none were sent",
        {"upstream": upstream, "authorizationServer": exc.found},
    )


def upstream_credentials(
    item: dict[str, Any], where: str, url: str | None, base_dir: Path | None
) -> UpstreamOAuth | None:
    """``[upstream.auth]`` (``kind`` required) or ``[upstream.oauth]`` (client credentials)."""
    if "auth" in item and "oauth" in item:
        raise ConfigError(f"{where}: give [upstream.auth] or [upstream.oauth], not both")
    data = item.get("auth", item.get("oauth"))
    where = f"{where}.auth" if "auth" in item else f"{where}.oauth"
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a table")
    kind = data.get("kind", "client_credentials" if where.endswith(".oauth") else None)
    if kind not in KINDS:
        raise ConfigError(f"{where}.kind must be one of {', '.join(KINDS)}")
    if url is None:
        raise ConfigError(f"{where}: OAuth is for URL upstreams (stdio servers use env)")
    client_id = data.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise ConfigError(f"{where}.client_id is required")
    secret = data.get("client_secret")
    key_file = data.get("private_key_file")
    if kind == "per_user":  # a public client (PKCE alone) may have neither
        if secret is not None and key_file is not None:
            raise ConfigError(f"{where}: give client_secret or private_key_file, not both")
    elif (secret is None) == (key_file is None):
        raise ConfigError(f"{where} needs exactly one of client_secret or private_key_file")
    if key_file is not None:
        path = Path(str(key_file))
        key_file = str(path if path.is_absolute() else (base_dir or Path.cwd()) / path)
        try:  # at load, not at the first connection: a bad key is a config error
            read_private_key(key_file)
        except Exception as exc:
            raise ConfigError(f"{where}.private_key_file {key_file}: {exc}") from None
    scopes = data.get("scopes", [])
    if isinstance(scopes, str):
        scopes = scopes.split()
    if not isinstance(scopes, list) or not all(isinstance(x, str) for x in scopes):
        raise ConfigError(f"{where}.scopes must be a list of scopes")
    if kind in ("token_exchange", "per_user") and item.get("era") == "legacy":
        raise ConfigError(
            f"{where}: {kind} needs a 2026-07-28 upstream (a legacy session belongs "
            "to the one identity that opened it; each call here has its caller's)"
        )
    public_url = data.get("public_url")
    if kind == "per_user" and not _is_http_url(public_url):
        raise ConfigError(
            f"{where}.public_url is required for kind = 'per_user': the gateway's own "
            "http(s) URL, where callers connect their accounts"
        )
    if kind != "per_user" and public_url is not None:
        raise ConfigError(f"{where}.public_url is for kind = 'per_user' only")
    audience = data.get("audience")
    if audience is not None and (kind != "token_exchange" or not isinstance(audience, str)):
        raise ConfigError(f"{where}.audience is a string, for kind = 'token_exchange' only")
    issuer, endpoint = data.get("issuer"), data.get("token_endpoint")
    for key, value in (("issuer", issuer), ("token_endpoint", endpoint)):
        if value is not None and not _is_http_url(value):
            raise ConfigError(f"{where}.{key} must be an http(s) URL, got {value!r}")
    return UpstreamOAuth(
        client_id=client_id,
        kind=kind,
        audience=audience,
        client_secret=str(secret) if secret else None,
        private_key_file=key_file,
        scopes=tuple(scopes),
        allow_loopback=bool(data.get("allow_loopback", False)),
        issuer=issuer,
        token_endpoint=endpoint,
        public_url=str(public_url).rstrip("/") if public_url is not None else None,
    )


def _is_http_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://")) and "#" not in value
