"""Gateway configuration: a TOML file (see ``examples/gateway.toml``).

Parsed once into frozen dataclasses; every mistake is reported with the key path that
caused it, at start-up (and on reload, and by ``mcpkit gateway --check``), not at the
first request.  The file is strict: it is checked against the typed schema of
:mod:`.schema` first, so an unknown key or table, or a key TOML moved into the table above
it, is an error naming it rather than a setting silently ignored.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tomllib
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from ..server.extensions import check_extension_id, check_method_name
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
    from .credentials import upstream_credentials
    from .schema import check

    data = _expand_tree(data, "")
    check(data)
    raw_upstreams = data.get("upstream") or data.get("upstreams")
    if isinstance(raw_upstreams, dict):
        raw_upstreams = [{"name": k, **v} for k, v in raw_upstreams.items()]
    if not isinstance(raw_upstreams, list) or not raw_upstreams:
        raise ConfigError("at least one [[upstream]] is required")
    upstreams = []
    seen: set[str] = set()
    for index, item in enumerate(raw_upstreams):
        where = f"upstream[{index}]"
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"{where}.name must match {_NAME.pattern}")
        if name in seen:
            raise ConfigError(f"{where}: duplicate upstream name {name!r}")
        seen.add(name)
        url, command = item.get("url"), item.get("command")
        replicas: tuple[str, ...] = ()
        if isinstance(url, list):  # replicas of one upstream (see .replicas)
            if not url or not all(isinstance(u, str) and u for u in url):
                raise ConfigError(f"{where}.url must be a URL or a non-empty list of URLs")
            replicas = tuple(url)
            if len(set(replicas)) != len(replicas):
                raise ConfigError(f"{where}.url lists the same replica twice")
            url = replicas[0]
            replicas = replicas if len(replicas) > 1 else ()
        elif url is not None and not isinstance(url, str):
            raise ConfigError(f"{where}.url must be a URL or a list of URLs")
        kind = item.get("kind", "mcp")
        if kind not in ("mcp", "openapi"):
            raise ConfigError(f"{where} ({name}).kind must be mcp or openapi")
        spec, base_url = (
            _openapi_source(item, where, name, base_dir) if kind != "mcp" else (None, None)
        )
        if kind == "mcp" and (url is None) == (command is None):
            raise ConfigError(f"{where} ({name}) needs exactly one of url or command")
        if isinstance(command, str):
            command = [_expand(c, f"{where}.command") for c in shlex.split(command)]
        if command is not None and not (isinstance(command, list) and command):
            raise ConfigError(f"{where}.command must be a string or a non-empty list")
        if command is not None:
            command = own_interpreter(command)
        prefix = item.get("prefix", "" if len(raw_upstreams) == 1 else f"{name}_")
        if not isinstance(prefix, str):
            raise ConfigError(f"{where}.prefix must be a string")
        era = item.get("era", "auto")
        if era not in ("auto", "modern", "legacy"):
            raise ConfigError(f"{where}.era must be auto, modern or legacy")
        upstreams.append(
            UpstreamConfig(
                name=name,
                url=url or None,
                command=tuple(command) if command else (),
                env={k: str(v) for k, v in (item.get("env") or {}).items()},
                headers={k: str(v) for k, v in (item.get("headers") or {}).items()},
                prefix=prefix,
                timeout_s=float(item.get("timeout", 30.0)),
                era=era,
                health_interval=_seconds(
                    item.get("health_interval", 10.0), f"{where}.health_interval"
                ),
                oauth=upstream_credentials(item, where, url, base_dir),
                replicas=replicas,
                kind=kind,
                spec=spec,
                base_url=base_url,
                **custom_methods(item, where),
            )
        )
    auth_data = data.get("auth") or {}
    mode = auth_data.get("mode", "none")
    if mode not in AUTH_MODES:
        raise ConfigError("auth.mode must be none, bearer, jwt or authorization_server")
    tokens: dict[str, dict[str, Any]] = {}
    for token, who in (auth_data.get("tokens") or {}).items():
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
    auth = _parse_auth(auth_data, mode, tokens)
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
    upstreams = [_pinned_to_front(u, auth.issuer) for u in upstreams]
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


def _pinned_to_front(upstream: UpstreamConfig, front_issuer: str | None) -> UpstreamConfig:
    """A ``token_exchange`` upstream without its own ``issuer`` exchanges callers' tokens
    at the front's issuer (the one that issued them), never where the upstream points."""
    oauth = upstream.oauth
    if oauth is None or oauth.kind != "token_exchange" or oauth.issuer is not None:
        return upstream
    return replace(upstream, oauth=replace(oauth, issuer=front_issuer))


def custom_methods(item: dict[str, Any], where: str) -> dict[str, tuple[str, ...]]:
    """``methods`` (custom method names) and ``extensions`` (identifiers, any method under
    one) of an ``[[upstream]]``, each checked as the server checks its own registrations."""
    found: dict[str, tuple[str, ...]] = {}
    for key, check in (("methods", check_method_name), ("extensions", check_extension_id)):
        values = _strings(item.get(key, []), f"{where}.{key}")
        for value in values:
            try:
                check(value)
            except ValueError as exc:
                raise ConfigError(f"{where}.{key}: {exc}") from None
        found[key] = values
    return found


def _openapi_source(
    item: dict[str, Any], where: str, name: str, base_dir: Path | None
) -> tuple[str, str | None]:
    """An OpenAPI upstream's description (a file, relative to the config, or a URL) and
    API base URL (default: the description's first ``servers`` entry)."""
    if item.get("url") is not None or item.get("command") is not None:
        raise ConfigError(f"{where} ({name}): an openapi upstream has spec, not url or command")
    spec, base_url = item.get("spec"), item.get("base_url")
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"{where} ({name}).spec must name an OpenAPI file or URL")
    if base_url is not None and not isinstance(base_url, str):
        raise ConfigError(f"{where} ({name}).base_url must be a URL")
    if not spec.startswith(("http://", "https://")):
        path = Path(spec)
        path = path if path.is_absolute() else (base_dir or Path.cwd()) / path
        if not path.is_file():
            raise ConfigError(f"{where} ({name}).spec: no such file {path}")
        spec = str(path)
    return spec, base_url


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


def own_interpreter(command: list[str]) -> list[str]:
    """A bare ``mcpkit``/``python``/``python3`` runs with the gateway's own interpreter.

    A config says ``command = "mcpkit serve server.py"`` meaning *this* mcpkit; looked up
    on ``PATH`` it is not found when the gateway was started as ``.venv/bin/mcpkit``
    without activating the venv (or, worse, it is another installation).  A path
    (``/usr/bin/python3``, ``./venv/bin/mcpkit``) is left as written."""
    head, rest = command[0], list(command[1:])
    if head == "mcpkit":
        return [sys.executable, "-m", "mcpkit", *rest]
    if head in ("python", "python3"):
        return [sys.executable, *rest]
    return list(command)


def _size(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}.max_result_bytes must be a positive number of bytes")
    return value


def _parse_auth(data: dict[str, Any], mode: str, tokens: dict[str, dict[str, Any]]) -> AuthConfig:
    """``[auth]``.  In ``jwt`` mode the gateway is an OAuth 2.1 protected resource: it needs
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


def _metrics_token(value: object) -> str | None:
    """``[gateway] metrics_token``: a non-empty string, or absent."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("gateway.metrics_token must be a non-empty string")
    return value.strip()
