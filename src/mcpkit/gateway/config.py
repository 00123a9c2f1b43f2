"""Gateway configuration: a TOML file (see ``examples/gateway.toml``).

Parsed once into frozen dataclasses; every mistake is reported with the key path that
caused it, at start-up (and on reload, and by ``mcpkit gateway --check``), not at the
first request.  The file is strict: it is checked against the typed schema of
:mod:`.schema` first, so an unknown key or table, or a key TOML moved into the table above
it, is an error naming it rather than a setting silently ignored.

The ``[[upstream]]`` tables are read by :mod:`.config_upstreams`, ``[auth]`` by
:mod:`.config_auth`; the dataclasses they build, and :func:`load_config`, are here.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from ..server.middleware.ratelimit import RateRule
from ..types.errors import ConfigError as ConfigError  # gateway.config is where users import it

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_RATE = re.compile(r"^\s*(\d+)\s*(?:/|per)\s*(\d*)\s*(second|minute|hour|day)s?\s*$")


DEFAULT_MAX_RESULT = 4 * 1024 * 1024


@dataclass(frozen=True)
class UpstreamOAuth:
    """Credentials *to* an upstream, through ``mcpkit.auth.client`` (see .credentials):
    ``client_credentials`` (the gateway's own token, a secret or ``private_key_jwt``) or
    ``token_exchange`` (RFC 8693: the caller's token exchanged for an upstream-audience
    one).  The front caller's token is never sent upstream as is."""

    client_id: str
    kind: str = "client_credentials"  # client_credentials | token_exchange | per_user
    #: RFC 8693 ``audience`` of the exchanged token (``resource`` is always the upstream).
    audience: str | None = None
    client_secret: str | None = None
    private_key_file: str | None = None
    scopes: tuple[str, ...] = ()
    #: Let discovery reach loopback addresses (a local authorization server in tests and
    #: development); the default refuses loopback and private addresses (SSRF guard).
    allow_loopback: bool = False
    #: The one authorization server the credentials (and callers' tokens) are sent to,
    #: whatever the upstream's metadata names (``token_exchange`` default: the front's
    #: own ``[auth] issuer``; None: the one the upstream names).
    issuer: str | None = None
    #: The one token endpoint they are posted to (None: the issuer's own).
    token_endpoint: str | None = None
    #: ``per_user``: the gateway's public URL; each caller connects their own account at
    #: ``{public_url}/connect/{upstream}``, the authorization server sends them back to
    #: ``{public_url}/connect/{upstream}/callback`` (the redirect URI to register).
    public_url: str | None = None


@dataclass(frozen=True)
class UpstreamConfig:
    name: str
    url: str | None = None
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    prefix: str = ""
    timeout_s: float = 30.0
    era: str = "auto"  # auto | modern | legacy
    #: Seconds between health checks (ping / server/discover); 0 turns them off.
    health_interval: float = 10.0
    oauth: UpstreamOAuth | None = None
    #: Replica URLs when ``url`` is a list of several (``url`` is then the first).
    replicas: tuple[str, ...] = ()
    #: ``kind = "openapi"``: a REST API served as tools through
    #: :func:`mcpkit.compose.from_openapi` (``spec`` a file or URL, ``base_url`` the API).
    kind: str = "mcp"
    spec: str | None = None
    base_url: str | None = None
    #: The custom methods the upstream serves (the wire never lists them), forwarded as
    #: they are: each ``methods`` entry, and any method under an ``extensions`` identifier.
    methods: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuthConfig:
    mode: str = "none"  # none | bearer | jwt | authorization_server
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    jwks_url: str | None = None
    jwks_file: str | None = None
    issuer: str | None = None
    audience: str | None = None
    principal_claim: str = "sub"
    groups_claim: str = "groups"
    #: The gateway's canonical URL (RFC 8707/9728), e.g. ``https://gw.example.com/mcp``:
    #: published in the protected-resource metadata and the default token audience.
    resource: str | None = None
    #: Issuers clients may get tokens from (RFC 9728 ``authorization_servers``).
    authorization_servers: tuple[str, ...] = ()
    #: Scopes every request needs (sent in the 401 challenge's ``scope``).
    scopes: tuple[str, ...] = ()
    #: Extra scopes per (namespaced) tool: a call without them is a 403 step-up.
    tool_scopes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: RFC 7662 introspection instead of JWT checks (opaque tokens), with the gateway's
    #: own client credentials at the authorization server.
    introspection_endpoint: str | None = None
    introspection_client_id: str | None = None
    introspection_client_secret: str | None = None
    #: ``authorization_server`` mode: the authorization server's settings (the keys of
    #: ``mcpkit serve --authorization-server FILE``), checked; built by :mod:`.auth`.
    authorization_server: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Rule:
    effect: str  # allow | deny
    principals: tuple[str, ...] = ("*",)
    groups: tuple[str, ...] = ()
    methods: tuple[str, ...] = ("*",)
    names: tuple[str, ...] = ("*",)
    #: Named in the audit line and in refusals (default ``rule[<index>]``).
    name: str = ""
    #: A CEL condition (``when = '...'``), compiled once at load (see .policy).
    when: str | None = None
    condition: Any = field(default=None, compare=False, repr=False)
    #: Whether ``when`` reads ``args`` (unknown when listing, or on headers alone).
    needs_args: bool = False


@dataclass(frozen=True)
class VirtualServer:
    """A second endpoint (``path``) exposing a chosen subset of the merged lists: glob
    patterns over the namespaced tool and prompt names and over resource URIs (templates
    by their ``uriTemplate``).  Nothing is exposed that no pattern names."""

    name: str
    path: str
    tools: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()


@dataclass(frozen=True)
class GatewayRateRule(RateRule):
    """A ``[[rate_limit]]`` rule as the gateway's file gives it: a :class:`RateRule` and
    what to do when the state store holding the counters cannot be reached."""

    #: ``"deny"`` (the default: fail closed, the request is refused) or ``"allow"`` (the
    #: request goes on uncounted).
    on_state_error: str = "deny"


#: The path the gateway serves MCP on: its own authorization server's resource.
MCP_PATH = "/mcp"

RESERVED_PATHS = ("/metrics", "/livez", "/readyz", "/healthz")


@dataclass(frozen=True)
class GatewayConfig:
    """A gateway's whole configuration, parsed and checked: upstreams, authentication, rules,
    rate limits, virtual servers and the ``[gateway]`` table.  Frozen: a reload builds a new one."""

    upstreams: tuple[UpstreamConfig, ...]
    auth: AuthConfig = field(default_factory=AuthConfig)
    rules: tuple[Rule, ...] = ()
    default_effect: str = "allow"
    rate_limits: tuple[RateRule, ...] = ()
    state: str = "memory:"
    audit_log: str | None = None
    metrics: bool = True
    #: ``[gateway] metrics_token``: /metrics wants it as a bearer token, and /readyz
    #: gives internal details (why an upstream is down) only to a request carrying it.
    metrics_token: str | None = None
    cache: bool = True
    name: str = "mcpkit-gateway"
    base_dir: Path = field(default_factory=Path.cwd)
    #: What /readyz needs: "all" upstreams up, "any" one, or these named ones.
    ready: str | tuple[str, ...] = "all"
    #: Browser origins allowed to call /mcp (CORS); empty: no CORS headers at all.
    cors_origins: tuple[str, ...] = ()
    #: Largest upstream answer passed on (bytes); ``result_caps`` overrides it per tool.
    max_result_bytes: int = 4 * 1024 * 1024
    result_caps: dict[str, int] = field(default_factory=dict)
    #: ``[[server]]``: virtual servers on their own paths (see :mod:`.views`).
    servers: tuple[VirtualServer, ...] = ()
    #: ``[[guardrail]]``: built when loaded, run on every request
    #: (:mod:`mcpkit.server.middleware.guardrails`).
    guardrails: tuple[Any, ...] = field(default=(), compare=False)
    #: ``[gateway] direct_calls``: the ``tools/call`` handler sends a plain forwarded call
    #: straight to its upstream (after the policy point, like every call); false sends
    #: every call through the composition of mounted proxies.
    direct_calls: bool = True

    @property
    def per_user(self) -> bool:
        """Whether some upstream connects each caller's own account (``per_user``)."""
        return any(u.oauth is not None and u.oauth.kind == "per_user" for u in self.upstreams)

    def view(self, name: str) -> VirtualServer | None:
        """The virtual server (``[[server]]``) named ``name``, or None."""
        return next((v for v in self.servers if v.name == name), None)

    def result_cap(self, tool: str) -> int:
        """The answer-size cap for one (namespaced) tool: the first matching glob."""
        if not self.result_caps:  # (the usual case, asked on every forwarded call)
            return self.max_result_bytes
        for pattern, cap in self.result_caps.items():
            if fnmatchcase(tool, pattern):
                return cap
        return self.max_result_bytes


def _strings(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ("*",)
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where} must be a string or a list of strings")


def _seconds(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{where} must be a number of seconds >= 0")
    return float(value)


def parse_rate(text: str, where: str) -> tuple[int, int]:
    match = _RATE.match(text)
    if not match:
        raise ConfigError(f"{where}: rate {text!r} is not like '10/minute' or '100 per 5 minutes'")
    amount = int(match.group(1))
    multiple = int(match.group(2) or 1)
    unit = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}[match.group(3)]
    if amount <= 0 or multiple <= 0:
        raise ConfigError(f"{where}: rate must be positive")
    return amount, multiple * unit


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expand(value: str, where: str = "config") -> str:
    """``$VAR``/``${VAR}`` from the environment, ``${VAR:-default}`` with a default; an
    unset variable without one is an error naming it (``os.path.expandvars`` would keep
    ``${TOKEN}`` as is and send it upstream as a credential)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        value = os.environ.get(name)
        if value is None:
            if match.group(2) is not None:
                return match.group(2)
            raise ConfigError(f"{where}: environment variable {name} is not set")
        return value

    return _VAR.sub(one, value)


def load_config(path: str | Path) -> GatewayConfig:
    """Read a gateway TOML file; any error is a :class:`ConfigError` naming the file and key."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{file}: {exc}") from None
    return parse_config(data, file.resolve().parent)


def _expand_tree(value: Any, where: str) -> Any:
    """Every string value of the file, expanded once, each error naming its key.  Not:
    a ``command`` given as one string (split first, then each word expanded, so a value
    with spaces stays one argument) and a rule's CEL ``when`` (``$`` is not for us there).
    The keys of ``[auth.tokens]`` are values too (the tokens)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            path = f"{where}.{key}" if where else key
            if key == "when" or (key == "command" and isinstance(item, str)):
                out[key] = item
            elif key == "tokens" and where == "auth" and isinstance(item, dict):
                out[key] = {_expand(k, "auth.tokens"): v for k, v in item.items()}
            else:
                out[key] = _expand_tree(item, path)
        return out
    if isinstance(value, list):
        return [_expand_tree(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, str):
        return _expand(value, where)
    return value


def parse_config(data: dict[str, Any], base_dir: Path | None = None) -> GatewayConfig:
    """Check a parsed TOML document and build the config; ``${VAR}`` values are expanded once,
    and relative paths resolve against ``base_dir``."""
    from .config_auth import parse_auth
    from .config_upstreams import parse_upstreams, pinned_to_front
    from .schema import check

    data = _expand_tree(data, "")
    check(data)
    upstreams = parse_upstreams(data, base_dir)
    auth = parse_auth(data.get("auth") or {})
    mode = auth.mode
    exchanging = [u.name for u in upstreams if u.oauth and u.oauth.kind == "token_exchange"]
    if exchanging and mode != "jwt":
        raise ConfigError(
            f"upstream {exchanging[0]}: token_exchange needs auth.mode = 'jwt' (the callers' "
            "OAuth access tokens are what is exchanged)"
        )
    per_user = [u.name for u in upstreams if u.oauth and u.oauth.kind == "per_user"]
    if per_user and mode == "none":
        raise ConfigError(
            f"upstream {per_user[0]}: per_user needs [auth] (bearer or jwt): every caller "
            "connects their own account, so the gateway must know who calls"
        )
    upstreams = [pinned_to_front(u, auth.issuer) for u in upstreams]
    rules = []
    for index, item in enumerate(data.get("rule") or data.get("rules") or []):
        where = f"rule[{index}]"
        effect = item.get("effect")
        if effect not in ("allow", "deny"):
            raise ConfigError(f"{where}.effect must be allow or deny")
        rule_name = item.get("name", f"rule[{index}]")
        if not isinstance(rule_name, str) or not rule_name:
            raise ConfigError(f"{where}.name must be a non-empty string")
        when = item.get("when")
        condition, needs_args = None, False
        if when is not None:
            from .policy import compile_condition  # (policy.py imports this module)

            condition, needs_args = compile_condition(when, f"{where} ({rule_name})")
        rules.append(
            Rule(
                effect=effect,
                principals=_strings(item.get("principals"), f"{where}.principals"),
                groups=_strings(item.get("groups"), f"{where}.groups") if "groups" in item else (),
                methods=_strings(item.get("methods"), f"{where}.methods"),
                names=_strings(item.get("names"), f"{where}.names"),
                name=rule_name,
                when=when,
                condition=condition,
                needs_args=needs_args,
            )
        )
    limits = []
    for index, item in enumerate(data.get("rate_limit") or data.get("rate_limits") or []):
        where = f"rate_limit[{index}]"
        name = item.get("name") or f"rule{index}"
        limit = item.get("limit")
        if not isinstance(limit, str):
            raise ConfigError(f"{where}.limit must be a string like '10/minute'")
        parse_rate(limit, where)  # (a clear error here; the limiter counts with `limits`)
        per = item.get("per", "principal")
        if per not in ("principal", "global"):
            raise ConfigError(f"{where}.per must be principal or global")
        limits.append(
            GatewayRateRule(
                name=name,
                limit=limit,
                methods=_strings(item.get("methods"), f"{where}.methods"),
                names=_strings(item.get("names"), f"{where}.names"),
                per=per,
                on_state_error=item.get("on_state_error", "deny"),
            )
        )
    default_effect = data.get("default_effect", "allow")
    if default_effect not in ("allow", "deny"):
        raise ConfigError("default_effect must be allow or deny")
    gateway = data.get("gateway") or {}
    names = {u.name for u in upstreams}
    ready = gateway.get("ready", "all")
    if isinstance(ready, list):
        unknown = [r for r in ready if r not in names]
        if unknown or not ready:
            raise ConfigError(f"gateway.ready names unknown upstreams: {unknown}")
        ready = tuple(ready)
    elif ready not in ("all", "any"):
        raise ConfigError('gateway.ready must be "all", "any" or a list of upstream names')
    cors = gateway.get("cors_origins", [])
    if not isinstance(cors, list) or not all(isinstance(o, str) for o in cors):
        raise ConfigError("gateway.cors_origins must be a list of origins")
    default_cap = _size(gateway.get("max_result_bytes", DEFAULT_MAX_RESULT), "gateway")
    caps = {
        str(k): _size(v, f"result_caps.{k}") for k, v in (data.get("result_caps") or {}).items()
    }
    servers = _parse_servers(data.get("server") or data.get("servers") or [])
    from ..server.middleware.guardrails import build_guardrails

    try:
        guardrails = build_guardrails(
            data.get("guardrail") or data.get("guardrails") or [], base_dir
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return GatewayConfig(
        upstreams=tuple(upstreams),
        auth=auth,
        rules=tuple(rules),
        default_effect=default_effect,
        rate_limits=tuple(limits),
        state=gateway.get("state", data.get("state", "memory:")),
        audit_log=gateway.get("audit_log", data.get("audit_log")),
        metrics=bool(gateway.get("metrics", True)),
        metrics_token=_metrics_token(gateway.get("metrics_token")),
        cache=bool(gateway.get("cache", True)),
        name=gateway.get("name", "mcpkit-gateway"),
        base_dir=base_dir or Path.cwd(),
        ready=ready,
        cors_origins=tuple(cors),
        max_result_bytes=default_cap,
        result_caps=caps,
        servers=servers,
        guardrails=guardrails,
        direct_calls=bool(gateway.get("direct_calls", True)),
    )


def _parse_servers(items: object) -> tuple[VirtualServer, ...]:
    if not isinstance(items, list):
        raise ConfigError("[[server]] must be an array of tables")
    out: list[VirtualServer] = []
    for index, item in enumerate(items):
        where = f"server[{index}]"
        name, path = item.get("name"), item.get("path")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"{where}.name must match {_NAME.pattern}")
        if not isinstance(path, str) or not re.match(r"^/[A-Za-z0-9_./-]*$", path):
            raise ConfigError(f"{where} ({name}).path must be a URL path like '/mcp/{name}'")
        path = path.rstrip("/") or "/"
        if path in RESERVED_PATHS or path.startswith("/.well-known"):
            raise ConfigError(f"{where} ({name}).path {path} is reserved")
        if any(v.path == path or v.name == name for v in out):
            raise ConfigError(f"{where} ({name}): another [[server]] has that name or path")
        lists = {}
        for kind in ("tools", "prompts", "resources"):
            value = item.get(kind, [])
            lists[kind] = () if value == [] else _strings(value, f"{where}.{kind}")
        out.append(VirtualServer(name, path, **lists))
    return tuple(out)


def _size(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}.max_result_bytes must be a positive number of bytes")
    return value


def _metrics_token(value: object) -> str | None:
    """``[gateway] metrics_token``: a non-empty string, or absent."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("gateway.metrics_token must be a non-empty string")
    return value.strip()
