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

The common shape is kept as it is (so a file written for another host works here); the host
adds optional keys of its own next to it (``timeout``, ``era``, ``disabled``, ``permission``,
per-tool ``tools``) and the top-level ``permissions`` and ``model`` sections.  ``${VAR}``
in ``env`` and ``headers`` is expanded from the environment, so secrets stay out of the file.
Every mistake is reported with the key that caused it, when the file is loaded.

A bare ``python``, ``python3`` or ``mcpkit`` as a server's command means *this host's*
interpreter (``sys.executable``) and scripts folder, not the first one on ``PATH``: a file
like ``examples/host.json`` then works from ``.venv/bin/mcpkit host`` without an activated
virtualenv, where ``PATH`` would have found a system Python without mcpkit.  The server's
status line shows what it resolved to.  Write a path (``/usr/bin/python3``) to opt out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..types.errors import ConfigError
from .policy import Permission

__all__ = ["ConfigError", "HostConfig", "ModelConfig", "ServerConfig", "load_config",
           "parse_config", "parse_server"]

#: Server names become the namespace of their tools, so they must be safe in a tool name.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server: a command (stdio) or a URL (Streamable HTTP)."""

    name: str
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: ``"type": "sse"``: the URL is a 2024-11-05 HTTP+SSE server (``/sse``).
    sse: bool = False
    #: Seconds a request may wait for an answer (progress extends it, up to the client's max).
    timeout: float = 60.0
    era: str = "auto"
    disabled: bool = False
    #: The server's default permission (None: the host-wide default).
    permission: Permission | None = None
    #: Per-tool permissions by the tool's own (un-namespaced) name.
    tools: dict[str, Permission] = field(default_factory=dict)
    #: OAuth for an HTTP server (``"oauth"`` in the file): ``None`` means on demand with
    #: dynamic registration; ``{"clientId", "clientSecret", "callbackPort", "scopes"}``
    #: pre-registers; ``False`` turns it off (a 401 is then just an error).
    oauth: dict[str, Any] | bool | None = None
    #: The bare command the file named, when it was resolved to this host's own
    #: interpreter or scripts folder (see :func:`resolve_command`).
    resolved_from: str | None = None

    @property
    def transport(self) -> str:
        return ("sse" if self.sse else "http") if self.url else "stdio"

    def describe(self) -> str:
        """What will run or be contacted, in full: shown to the person before connecting."""
        if self.url:
            return self.url
        line = shlex.join(self.command)
        if self.resolved_from is not None:
            line += f"  ({self.resolved_from!r} is this host's own)"
        return line

    def target(self) -> str | list[str]:
        """What the client connects to: the URL, or the command as an argv list."""
        return self.url if self.url else list(self.command)


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


def _expand(value: str, where: str) -> str:
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        return os.environ[name]

    return _VAR.sub(sub, value)


def _str_map(value: Any, where: str, *, expand: bool) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object of strings")
    out = {}
    for key, item in value.items():
        if not isinstance(item, (str, int, float, bool)):
            raise ConfigError(f"{where}.{key} must be a string")
        text = str(item)
        out[str(key)] = _expand(text, f"{where}.{key}") if expand else text
    return out


def resolve_command(argv: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """``argv`` with a bare ``python``/``python3``/``mcpkit`` replaced by this host's own
    interpreter or script (``mcpkit`` falls back to ``python -m mcpkit.cli.main`` when no
    script is installed next to the interpreter); the second item is the replaced name."""
    if not argv:
        return argv, None
    head = argv[0]
    if head in ("python", "python3"):
        return (sys.executable, *argv[1:]), head
    if head == "mcpkit":
        script = os.path.join(sysconfig.get_path("scripts"), "mcpkit")
        if os.access(script, os.X_OK):
            return (script, *argv[1:]), head
        return (sys.executable, "-m", "mcpkit.cli.main", *argv[1:]), head
    return argv, None


def _permission(value: Any, where: str) -> Permission:
    try:
        return Permission(value)
    except ValueError:
        raise ConfigError(f"{where} must be one of allow, ask, deny (not {value!r})") from None


def parse_server(name: str, item: Any) -> ServerConfig:
    """One ``mcpServers`` entry (also used for servers added at run time)."""
    where = f"mcpServers.{name}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: a server name must match {_NAME.pattern}")
    if not isinstance(item, dict):
        raise ConfigError(f"{where} must be an object")
    kind = item.get("type") or item.get("transport")
    url, command = item.get("url") or item.get("serverUrl"), item.get("command")
    if (url is None) == (command is None):
        raise ConfigError(f"{where} needs exactly one of command (stdio) or url (HTTP)")
    if kind is not None and kind not in ("stdio", "http", "streamable-http", "streamableHttp",
                                         "sse"):
        raise ConfigError(f"{where}.type {kind!r} is not supported (stdio, http or sse)")
    if kind == "sse" and url is None:
        raise ConfigError(f"{where}: type sse needs a url (the server's /sse endpoint)")
    argv: tuple[str, ...] = ()
    if command is not None:
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f"{where}.command must be a non-empty string")
        args = item.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
            raise ConfigError(f"{where}.args must be a list of strings")
        # A bare command line ("python server.py") is common in hand-written files.
        head = shlex.split(command) if not args and " " in command.strip() else [command]
        argv = (*head, *(str(a) for a in args))
    elif not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url must be an http(s) URL")
    argv, resolved_from = resolve_command(argv)
    timeout = item.get("timeout", 60.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{where}.timeout must be a positive number of seconds")
    era = item.get("era", "auto")
    if era not in ("auto", "modern", "legacy"):
        raise ConfigError(f"{where}.era must be auto, modern or legacy")
    tools = item.get("tools") or {}
    if not isinstance(tools, dict):
        raise ConfigError(f"{where}.tools must map tool names to allow/ask/deny")
    cwd = item.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{where}.cwd must be a string")
    permission = item.get("permission")
    oauth = item.get("oauth")
    if oauth is not None and not isinstance(oauth, (bool, dict)):
        raise ConfigError(f"{where}.oauth must be false or an object (clientId, ...)")
    if isinstance(oauth, dict):
        port = oauth.get("callbackPort", 0)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536:
            raise ConfigError(f"{where}.oauth.callbackPort must be a port number")
        scopes = oauth.get("scopes")
        if scopes is not None and not (isinstance(scopes, list)
                                       and all(isinstance(x, str) for x in scopes)):
            raise ConfigError(f"{where}.oauth.scopes must be a list of strings")
    return ServerConfig(
        name=name,
        command=argv,
        env=_str_map(item.get("env"), f"{where}.env", expand=True),
        cwd=cwd,
        url=url,
        headers=_str_map(item.get("headers"), f"{where}.headers", expand=True),
        sse=kind == "sse",
        timeout=float(timeout),
        era=era,
        disabled=bool(item.get("disabled", False)),
        permission=None if permission is None else _permission(permission, f"{where}.permission"),
        tools={str(k): _permission(v, f"{where}.tools.{k}") for k, v in tools.items()},
        resolved_from=resolved_from,
        oauth=True if oauth is True else oauth,
    )


def _parse_model(raw: Any) -> ModelConfig | None:
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
    ``${VAR}`` values come from the environment."""
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a JSON object")
    raw_servers = data.get("mcpServers", data.get("servers", {}))
    if not isinstance(raw_servers, dict):
        raise ConfigError("mcpServers must be an object keyed by server name")
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
            isinstance(r, dict) and isinstance(r.get("uri"), str) for r in roots):
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
        server_permissions={str(k): _permission(v, f"permissions.servers.{k}")
                            for k, v in server_perms.items()},
        tool_permissions={str(k): _permission(v, f"permissions.tools.{k}")
                          for k, v in tool_perms.items()},
        model=_parse_model(data.get("model")),
        audit_log=audit if isinstance(audit, str) else None,
        max_tool_output_tokens=cap,
        tool_search=search,
        roots=tuple({k: str(v) for k, v in r.items() if k in ("uri", "name")} for r in roots),
    )


def load_config(path: str | Path) -> HostConfig:
    """Read an ``mcpServers`` JSON file; errors are a :class:`ConfigError` naming the file."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: {exc}") from None
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{file}: {exc}") from None
