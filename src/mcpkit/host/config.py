"""Host configuration: the ``mcpServers`` JSON shape every MCP host understands.

::

    {"mcpServers": {
        "files":   {"command": "python", "args": ["files.py"], "env": {"ROOT": "${HOME}/notes"}},
        "weather": {"url": "http://127.0.0.1:8000/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"}}
     },
     "permissions": {"default": "ask", "servers": {"weather": "allow"},
                     "tools": {"files__delete": "deny"}},
     "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"}}

The common shape is kept as it is (so a file written for another host works here).  How
to reach each server (command or URL, ``env``, ``headers``, ``timeout``, ``era``,
``disabled``, ``${VAR}`` expansion, a bare ``python`` meaning this host's own interpreter)
is parsed by :mod:`mcpkit.client.config`, which ``Client.from_config`` shares; this module
adds the host's own keys next to it (``permission``, per-tool ``tools``, ``oauth``) and the
top-level ``permissions``, ``model``, ``roots``, ``auditLog``, ``toolSearch`` and
``maxToolOutputTokens`` sections.  Every mistake is reported with the key that caused it,
when the file is loaded, and a key the host does not know is one (:mod:`.schema`): ignored,
a misspelt ``permision`` or another host's ``envFile`` would silently change what runs.
The server's status line shows what a bare command resolved to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..client import config as _common
from ..client.config import ConfigError, read_config, resolve_command, server_entries
from .policy import Permission

__all__ = [
    "ConfigError",
    "HostConfig",
    "ModelConfig",
    "ServerConfig",
    "load_config",
    "parse_config",
    "parse_server",
    "resolve_command",
    "user_file",
]


def user_file(variable: str, name: str) -> Path:
    """Where the host keeps one of a person's files: the path in the environment variable
    ``variable`` when set, else ``name`` in ``$XDG_CONFIG_HOME/mcpkit`` (``~/.config``
    by default)."""
    explicit = os.environ.get(variable)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mcpkit" / name


@dataclass(frozen=True)
class ServerConfig(_common.ServerConfig):
    """One MCP server as the host runs it: how to reach it, plus the host's own rules."""

    #: The server's default permission (None: the host-wide default).
    permission: Permission | None = None
    #: Per-tool permissions by the tool's own (un-namespaced) name.
    tools: dict[str, Permission] = field(default_factory=dict)
    #: OAuth for an HTTP server (``"oauth"`` in the file): ``None`` means on demand with
    #: dynamic registration; ``{"clientId", "clientSecret", "callbackPort", "scopes"}``
    #: pre-registers; ``False`` turns it off (a 401 is then just an error).
    oauth: dict[str, Any] | bool | None = None


@dataclass(frozen=True)
class ModelConfig:
    """Which model the loop talks to; keys come from the environment, never the file."""

    provider: str  # anthropic | openai | scripted
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    max_tokens: int = 1024
    system: str | None = None
    #: For the scripted provider: the replies, in order (see ScriptedModel.from_config).
    script: tuple[Any, ...] = ()


@dataclass(frozen=True)
class HostConfig:
    """The host's configuration: servers, permissions, model and limits, from the common
    ``mcpServers`` JSON shape (:func:`load_config`) or built in code."""

    servers: tuple[ServerConfig, ...] = ()
    default_permission: Permission = Permission.ASK
    server_permissions: dict[str, Permission] = field(default_factory=dict)
    #: Per-tool permissions keyed by namespaced tool name (``server__tool``).
    tool_permissions: dict[str, Permission] = field(default_factory=dict)
    model: ModelConfig | None = None
    audit_log: str | None = None
    #: Cap on one tool result fed to the model, in estimated tokens (``maxToolOutputTokens``).
    max_tool_output_tokens: int = 25_000
    #: Deferred tool loading (``toolSearch``): with more model-visible tools than this, the
    #: model gets a search tool and loads the tools it picks (None: never; 0: always).
    tool_search: int | None = None
    roots: tuple[dict[str, str], ...] = ()


def _permission(value: Any, where: str) -> Permission:
    try:
        return Permission(value)
    except ValueError:
        raise ConfigError(f"{where} must be one of allow, ask, deny (not {value!r})") from None


def parse_server(name: str, item: Any) -> ServerConfig:
    """One ``mcpServers`` entry (also used for servers added at run time); an unknown key
    is an error naming it."""
    from .schema import check_server

    check_server(name, item)
    common = _common.parse_server(name, item)
    where = f"mcpServers.{name}"
    tools = item.get("tools") or {}
    if not isinstance(tools, dict):
        raise ConfigError(f"{where}.tools must map tool names to allow/ask/deny")
    permission = item.get("permission")
    oauth = item.get("oauth")
    if oauth is not None and not isinstance(oauth, (bool, dict)):
        raise ConfigError(f"{where}.oauth must be false or an object (clientId, ...)")
    if isinstance(oauth, dict):
        port = oauth.get("callbackPort", 0)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536:
            raise ConfigError(f"{where}.oauth.callbackPort must be a port number")
        scopes = oauth.get("scopes")
        if scopes is not None and not (
            isinstance(scopes, list) and all(isinstance(x, str) for x in scopes)
        ):
            raise ConfigError(f"{where}.oauth.scopes must be a list of strings")
    return ServerConfig(
        **common.common(),
        permission=None if permission is None else _permission(permission, f"{where}.permission"),
        tools={str(k): _permission(v, f"{where}.tools.{k}") for k, v in tools.items()},
        oauth=True if oauth is True else oauth,
    )


def _parse_model(raw: object) -> ModelConfig | None:
    if raw is None:
        return None
    if isinstance(raw, str):  # "anthropic:claude-sonnet-4-5"
        provider_name, _, model_name = raw.partition(":")
        raw = {"provider": provider_name, "model": model_name}
    if not isinstance(raw, dict):
        raise ConfigError("model must be an object or 'provider:model'")
    provider = raw.get("provider")
    if provider not in ("anthropic", "openai", "scripted"):
        raise ConfigError("model.provider must be anthropic, openai or scripted")
    script = raw.get("script") or []
    if not isinstance(script, list):
        raise ConfigError("model.script must be a list of replies")
    max_tokens = raw.get("maxTokens", raw.get("max_tokens", 1024))
    if not isinstance(max_tokens, int) or max_tokens <= 0:
        raise ConfigError("model.maxTokens must be a positive integer")
    return ModelConfig(
        provider=provider,
        model=str(raw.get("model") or ""),
        base_url=raw.get("baseUrl") or raw.get("base_url"),
        api_key_env=raw.get("apiKeyEnv") or raw.get("api_key_env"),
        max_tokens=max_tokens,
        system=raw.get("system"),
        script=tuple(script),
    )


def parse_config(data: Any) -> HostConfig:
    """Build a :class:`HostConfig` from an already parsed ``mcpServers`` document;
    ``${VAR}`` values come from the environment.  Strict: an unknown key anywhere is an
    error naming its path (see :mod:`.schema`)."""
    from .schema import check

    raw_servers = server_entries(data)
    check(data)
    servers = tuple(parse_server(name, item) for name, item in raw_servers.items())
    perms = data.get("permissions") or {}
    if not isinstance(perms, dict):
        raise ConfigError("permissions must be an object")
    server_perms = perms.get("servers") or {}
    tool_perms = perms.get("tools") or {}
    if not isinstance(server_perms, dict) or not isinstance(tool_perms, dict):
        raise ConfigError("permissions.servers and permissions.tools must be objects")
    roots = data.get("roots") or []
    if not isinstance(roots, list) or not all(
        isinstance(r, dict) and isinstance(r.get("uri"), str) for r in roots
    ):
        raise ConfigError("roots must be a list of {uri, name?} objects")
    audit = data.get("auditLog")
    search = data.get("toolSearch", False)
    if search is True:
        search = 0
    elif search is False or search is None:
        search = None
    elif isinstance(search, bool) or not isinstance(search, int) or search < 0:
        raise ConfigError("toolSearch must be true, false or a number of tools")
    cap = data.get("maxToolOutputTokens", 25_000)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 100:
        raise ConfigError("maxToolOutputTokens must be an integer of at least 100")
    return HostConfig(
        servers=servers,
        default_permission=_permission(perms.get("default", "ask"), "permissions.default"),
        server_permissions={
            str(k): _permission(v, f"permissions.servers.{k}") for k, v in server_perms.items()
        },
        tool_permissions={
            str(k): _permission(v, f"permissions.tools.{k}") for k, v in tool_perms.items()
        },
        model=_parse_model(data.get("model")),
        audit_log=audit if isinstance(audit, str) else None,
        max_tool_output_tokens=cap,
        tool_search=search,
        roots=tuple({k: str(v) for k, v in r.items() if k in ("uri", "name")} for r in roots),
    )


def load_config(path: str | Path) -> HostConfig:
    """Read an ``mcpServers`` JSON file; errors are a :class:`ConfigError` naming the file."""
    data = read_config(path)
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
