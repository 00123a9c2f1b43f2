"""Gateway configuration: a TOML file (see ``examples/gateway.toml``).

Parsed once into frozen dataclasses; every mistake is reported with the key path that
caused it, at start-up, not at the first request.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_RATE = re.compile(r"^\s*(\d+)\s*(?:/|per)\s*(\d*)\s*(second|minute|hour|day)s?\s*$")


class ConfigError(ValueError):
    pass


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


@dataclass(frozen=True)
class AuthConfig:
    mode: str = "none"  # none | bearer | jwt
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    jwks_url: str | None = None
    jwks_file: str | None = None
    issuer: str | None = None
    audience: str | None = None
    principal_claim: str = "sub"
    groups_claim: str = "groups"


@dataclass(frozen=True)
class Rule:
    effect: str  # allow | deny
    principals: tuple[str, ...] = ("*",)
    groups: tuple[str, ...] = ()
    methods: tuple[str, ...] = ("*",)
    names: tuple[str, ...] = ("*",)


@dataclass(frozen=True)
class RateLimitRule:
    name: str
    limit: str  # "10/minute"
    amount: int
    window_s: int
    methods: tuple[str, ...] = ("*",)
    names: tuple[str, ...] = ("*",)
    per: str = "principal"  # principal | global


@dataclass(frozen=True)
class GatewayConfig:
    upstreams: tuple[UpstreamConfig, ...]
    auth: AuthConfig = field(default_factory=AuthConfig)
    rules: tuple[Rule, ...] = ()
    default_effect: str = "allow"
    rate_limits: tuple[RateLimitRule, ...] = ()
    state: str = "memory:"
    audit_log: str | None = None
    metrics: bool = True
    cache: bool = True
    name: str = "mcpkit-gateway"
    base_dir: Path = field(default_factory=Path.cwd)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ("*",)
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where} must be a string or a list of strings")


def _seconds(value: Any, where: str) -> float:
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


def _expand(value: str) -> str:
    return os.path.expandvars(value)


def load_config(path: str | Path) -> GatewayConfig:
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{file}: {exc}") from None
    return parse_config(data, file.resolve().parent)


def parse_config(data: dict[str, Any], base_dir: Path | None = None) -> GatewayConfig:
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
        if (url is None) == (command is None):
            raise ConfigError(f"{where} ({name}) needs exactly one of url or command")
        if isinstance(command, str):
            command = shlex.split(command)
        if command is not None and not (isinstance(command, list) and command):
            raise ConfigError(f"{where}.command must be a string or a non-empty list")
        prefix = item.get("prefix", "" if len(raw_upstreams) == 1 else f"{name}_")
        if not isinstance(prefix, str):
            raise ConfigError(f"{where}.prefix must be a string")
        era = item.get("era", "auto")
        if era not in ("auto", "modern", "legacy"):
            raise ConfigError(f"{where}.era must be auto, modern or legacy")
        upstreams.append(
            UpstreamConfig(
                name=name,
                url=_expand(url) if url else None,
                command=tuple(_expand(c) for c in command) if command else (),
                env={k: _expand(str(v)) for k, v in (item.get("env") or {}).items()},
                headers={k: _expand(str(v)) for k, v in (item.get("headers") or {}).items()},
                prefix=prefix,
                timeout_s=float(item.get("timeout", 30.0)),
                era=era,
                health_interval=_seconds(
                    item.get("health_interval", 10.0), f"{where}.health_interval"
                ),
            )
        )
    prefixes = [u.prefix for u in upstreams]
    if len(upstreams) > 1 and "" in prefixes:
        raise ConfigError("with several upstreams every upstream needs a non-empty prefix")
    auth_data = data.get("auth") or {}
    mode = auth_data.get("mode", "none")
    if mode not in ("none", "bearer", "jwt"):
        raise ConfigError("auth.mode must be none, bearer or jwt")
    tokens: dict[str, dict[str, Any]] = {}
    for token, who in (auth_data.get("tokens") or {}).items():
        if isinstance(who, str):
            who = {"principal": who}
        if not isinstance(who, dict) or not isinstance(who.get("principal"), str):
            raise ConfigError(f"auth.tokens.{token[:4]}...: needs a principal")
        tokens[_expand(token)] = {
            "principal": who["principal"],
            "groups": list(who.get("groups", [])),
        }
    if mode == "bearer" and not tokens:
        raise ConfigError("auth.mode = 'bearer' needs [auth.tokens]")
    if mode == "jwt" and not (auth_data.get("jwks_url") or auth_data.get("jwks_file")):
        raise ConfigError("auth.mode = 'jwt' needs jwks_url or jwks_file")
    auth = AuthConfig(
        mode=mode,
        tokens=tokens,
        jwks_url=auth_data.get("jwks_url"),
        jwks_file=auth_data.get("jwks_file"),
        issuer=auth_data.get("issuer"),
        audience=auth_data.get("audience"),
        principal_claim=auth_data.get("principal_claim", "sub"),
        groups_claim=auth_data.get("groups_claim", "groups"),
    )
    rules = []
    for index, item in enumerate(data.get("rule") or data.get("rules") or []):
        where = f"rule[{index}]"
        effect = item.get("effect")
        if effect not in ("allow", "deny"):
            raise ConfigError(f"{where}.effect must be allow or deny")
        rules.append(
            Rule(
                effect=effect,
                principals=_strings(item.get("principals"), f"{where}.principals"),
                groups=_strings(item.get("groups"), f"{where}.groups") if "groups" in item else (),
                methods=_strings(item.get("methods"), f"{where}.methods"),
                names=_strings(item.get("names"), f"{where}.names"),
            )
        )
    limits = []
    for index, item in enumerate(data.get("rate_limit") or data.get("rate_limits") or []):
        where = f"rate_limit[{index}]"
        name = item.get("name") or f"rule{index}"
        limit = item.get("limit")
        if not isinstance(limit, str):
            raise ConfigError(f"{where}.limit must be a string like '10/minute'")
        amount, window = parse_rate(limit, where)
        per = item.get("per", "principal")
        if per not in ("principal", "global"):
            raise ConfigError(f"{where}.per must be principal or global")
        limits.append(
            RateLimitRule(
                name=name,
                limit=limit,
                amount=amount,
                window_s=window,
                methods=_strings(item.get("methods"), f"{where}.methods"),
                names=_strings(item.get("names"), f"{where}.names"),
                per=per,
            )
        )
    default_effect = data.get("default_effect", "allow")
    if default_effect not in ("allow", "deny"):
        raise ConfigError("default_effect must be allow or deny")
    gateway = data.get("gateway") or {}
    return GatewayConfig(
        upstreams=tuple(upstreams),
        auth=auth,
        rules=tuple(rules),
        default_effect=default_effect,
        rate_limits=tuple(limits),
        state=_expand(gateway.get("state", data.get("state", "memory:"))),
        audit_log=gateway.get("audit_log", data.get("audit_log")),
        metrics=bool(gateway.get("metrics", True)),
        cache=bool(gateway.get("cache", True)),
        name=gateway.get("name", "mcpkit-gateway"),
        base_dir=base_dir or Path.cwd(),
    )
