"""The ``[[upstream]]`` tables of a gateway configuration (:mod:`.config`): where each
upstream is (a URL, replicas, a command, an OpenAPI description), how it is named and
prefixed, its era, timeouts and custom methods; its credentials are :mod:`.credentials`."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..server.extensions import check_extension_id, check_method_name
from .config import _NAME, ConfigError, UpstreamConfig, _expand, _seconds, _strings

__all__ = ["custom_methods", "own_interpreter", "parse_upstreams", "pinned_to_front"]


def parse_upstreams(data: dict[str, Any], base_dir: Path | None) -> list[UpstreamConfig]:
    """``[[upstream]]`` (or an ``[upstreams.NAME]`` table): at least one, names unique; each
    a URL (or a list of replica URLs), a command, or an OpenAPI description (``kind =
    "openapi"``), with its credentials (:mod:`.credentials`)."""
    from .credentials import upstream_credentials

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
    return upstreams


def pinned_to_front(upstream: UpstreamConfig, front_issuer: str | None) -> UpstreamConfig:
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
