"""The gateway TOML's typed schema: every table and key the gateway reads, nothing else.

:func:`check` runs before the file is built into a :class:`~.config.GatewayConfig`
(at start, on reload and for ``mcpkit gateway --check``): an unknown key or table is an
error naming its path with the closest known key, and a key TOML moved into the table
above it (a top-level ``default_effect`` written after ``[auth.tokens]``) is named with
its fix.  The schema checks shapes and types; what a value means (a rate, a URL, a CEL
condition) is checked where the config is built, by :mod:`.config`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr
from pydantic.functional_validators import BeforeValidator

from ..auth.server.settings import UpstreamSettings
from ..types.errors import ConfigError
from ..types.strict import check_document

__all__ = ["GatewayFile", "check"]


def _string_or_strings(value: object) -> object:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError("must be a string or a list of strings")


def _number(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("must be a number")
    return value


def _token(value: object) -> object:
    return {"principal": value} if isinstance(value, str) else value


def _scalar(value: object) -> object:
    if isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError("must be a string (or a number or boolean, sent as text)")


#: ``"x"`` or ``["x", "y"]`` (globs, scopes, URLs, a command line or its words).
Strings = Annotated[str | list[str], BeforeValidator(_string_or_strings)]
#: A header or environment value: written as text.
Scalar = Annotated[str | int | float | bool, BeforeValidator(_scalar)]
#: Seconds (an integer or a float; text such as "30" is read as a number).
Number = Annotated[float, BeforeValidator(_number)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class UpstreamAuthTable(_Table):
    """``[upstream.auth]`` / ``[upstream.oauth]``."""

    kind: StrictStr | None = None
    client_id: StrictStr | None = None
    client_secret: StrictStr | None = None
    private_key_file: StrictStr | None = None
    scopes: Strings | None = None
    audience: StrictStr | None = None
    allow_loopback: StrictBool = False
    #: The only authorization server the credentials (and callers' tokens) may go to.
    issuer: StrictStr | None = None
    #: The only token endpoint they may be posted to.
    token_endpoint: StrictStr | None = None
    #: ``kind = "per_user"``: the gateway's public URL (connect links, OAuth callback).
    public_url: StrictStr | None = None


class UpstreamTable(_Table):
    """``[[upstream]]``."""

    name: StrictStr | None = None
    url: Strings | None = None
    command: Strings | None = None
    env: dict[str, Scalar] | None = None
    headers: dict[str, Scalar] | None = None
    prefix: StrictStr | None = None
    timeout: Number | None = None
    era: StrictStr | None = None
    health_interval: Number | None = None
    auth: UpstreamAuthTable | None = None
    oauth: UpstreamAuthTable | None = None
    kind: StrictStr | None = None
    spec: StrictStr | None = None
    base_url: StrictStr | None = None
    methods: list[StrictStr] | None = None
    extensions: list[StrictStr] | None = None


class TokenTable(_Table):
    """One ``[auth.tokens]`` entry written as a table."""

    principal: StrictStr
    groups: list[StrictStr] = []


#: ``"token" = "principal"`` or ``"token" = { principal = ..., groups = [...] }``.
Token = Annotated[TokenTable, BeforeValidator(_token)]


class AuthTable(_Table):
    """``[auth]``."""

    mode: StrictStr | None = None
    tokens: dict[str, Token] | None = None
    jwks_url: StrictStr | None = None
    jwks_file: StrictStr | None = None
    issuer: StrictStr | None = None
    audience: StrictStr | None = None
    principal_claim: StrictStr | None = None
    groups_claim: StrictStr | None = None
    resource: StrictStr | None = None
    authorization_servers: list[StrictStr] | None = None
    scopes: Strings | None = None
    tool_scopes: dict[str, Strings] | None = None
    introspection_endpoint: StrictStr | None = None
    introspection_client_id: StrictStr | None = None
    introspection_client_secret: StrictStr | None = None
    # mode = "authorization_server": the gateway's own authorization server (the keys of
    # ``mcpkit serve --authorization-server FILE``; ``issuer`` and ``scopes`` are above).
    state: StrictStr | None = None
    required_scopes: list[StrictStr] | None = None
    consent: StrictBool | None = None
    access_token_ttl_s: int | None = None
    refresh_token_ttl_s: int | None = None
    upstream: UpstreamSettings | None = None


class RuleTable(_Table):
    """``[[rule]]``."""

    effect: StrictStr | None = None
    principals: Strings | None = None
    groups: Strings | None = None
    methods: Strings | None = None
    names: Strings | None = None
    name: StrictStr | None = None
    when: StrictStr | None = None


class RateLimitTable(_Table):
    """``[[rate_limit]]``."""

    name: StrictStr | None = None
    limit: StrictStr | None = None
    methods: Strings | None = None
    names: Strings | None = None
    per: StrictStr | None = None
    on_state_error: Literal["deny", "allow"] = "deny"


class ServerTable(_Table):
    """``[[server]]`` (a virtual server)."""

    name: StrictStr | None = None
    path: StrictStr | None = None
    tools: Strings | None = None
    prompts: Strings | None = None
    resources: Strings | None = None


class GatewayTable(_Table):
    """``[gateway]``."""

    name: StrictStr | None = None
    state: StrictStr | None = None
    audit_log: StrictStr | None = None
    metrics: StrictBool | None = None
    cache: StrictBool | None = None
    ready: Strings | None = None
    cors_origins: list[StrictStr] | None = None
    max_result_bytes: int | None = None
    direct_calls: StrictBool | None = None
    metrics_token: StrictStr | None = None


class GatewayFile(_Table):
    """The whole file.  ``upstreams``, ``rules``, ... are accepted spellings of the
    singular tables; ``state`` and ``audit_log`` at the top are older spellings of the
    ``[gateway]`` keys."""

    upstream: list[UpstreamTable] | None = None
    upstreams: list[UpstreamTable] | None = None
    default_effect: Literal["allow", "deny"] | None = None
    gateway: GatewayTable | None = None
    auth: AuthTable | None = None
    rule: list[RuleTable] | None = None
    rules: list[RuleTable] | None = None
    rate_limit: list[RateLimitTable] | None = None
    rate_limits: list[RateLimitTable] | None = None
    server: list[ServerTable] | None = None
    servers: list[ServerTable] | None = None
    guardrail: list[dict[str, Any]] | None = None
    guardrails: list[dict[str, Any]] | None = None
    result_caps: dict[str, int] | None = None
    state: StrictStr | None = None
    audit_log: StrictStr | None = None


def check(data: dict[str, Any]) -> None:
    """Raise a :class:`ConfigError` naming every unknown, misplaced or mistyped key."""
    check_document(
        GatewayFile, _upstreams_as_list(data), secret_tables=[("auth", "tokens")], toml=True
    )


def _upstreams_as_list(data: dict[str, Any]) -> dict[str, Any]:
    """``[upstream.NAME]`` tables (the keyed spelling) as the ``[[upstream]]`` list."""
    out = dict(data)
    for key in ("upstream", "upstreams"):
        value = out.get(key)
        if isinstance(value, dict):
            if not all(isinstance(v, dict) for v in value.values()):
                raise ConfigError(f"{key} must be an array of tables ([[{key}]])")
            out[key] = [{"name": name, **item} for name, item in value.items()]
    return out
