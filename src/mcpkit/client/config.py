"""The ``mcpServers`` shape every MCP host and client understands, parsed once.

::

    {"mcpServers": {
        "files":   {"command": "python", "args": ["files.py"], "env": {"ROOT": "${HOME}/notes"}},
        "weather": {"url": "http://127.0.0.1:8000/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "old":     {"type": "sse", "url": "http://127.0.0.1:9000/sse"}
     }}

This is the part of a configuration that says *how to reach* each server, so it lives in
the client layer: :meth:`mcpkit.client.Client.from_config` reads it to open one client per
server, and the host (:mod:`mcpkit.host.config`) reads it through here and adds its own
keys (permissions, per-tool rules, OAuth, the model) on top.  Here, keys of an entry that
say nothing about reaching the server are left alone, so ``Client.from_config`` reads a
host's file; the host itself refuses keys it does not know (:mod:`mcpkit.host.schema`).

Each entry may also carry ``timeout`` (seconds per request), ``era`` (``auto``, ``modern``
or ``legacy``), ``cwd`` and ``disabled``.  ``${VAR}`` in ``env`` and ``headers`` is
expanded from the environment, so secrets stay out of the file.  Every mistake is reported
with the key that caused it, when the file is loaded.

A bare ``python``, ``python3`` or ``mcpkit`` as a server's command means *this process's*
interpreter (``sys.executable``) and scripts folder, not the first one on ``PATH``: a file
like ``examples/host.json`` then works from ``.venv/bin/mcpkit host`` without an activated
virtualenv, where ``PATH`` would have found a system Python without mcpkit.  Write a path
(``/usr/bin/python3``) to opt out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import sysconfig
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..types.errors import ConfigError

__all__ = [
    "ConfigError",
    "ServerConfig",
    "check_name",
    "client_options",
    "parse_server",
    "read_config",
    "resolve_command",
    "server_entries",
    "str_map",
]

#: Server names become the namespace of their tools, so they must be safe in a tool name.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TYPES = ("stdio", "http", "streamable-http", "streamableHttp", "sse")


@dataclass(frozen=True)
class ServerConfig:
    """How to reach one MCP server: a command (stdio) or a URL (Streamable HTTP, HTTP+SSE)."""

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
    #: The bare command the file named, when it was resolved to this process's own
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

    def common(self) -> dict[str, Any]:
        """This entry's fields, to build a richer config (the host's) from it."""
        return {f.name: getattr(self, f.name) for f in fields(ServerConfig)}


def client_options(config: ServerConfig) -> dict[str, Any]:
    """The :class:`~mcpkit.client.Client` options an entry sets (its target aside)."""
    options: dict[str, Any] = {"timeout": config.timeout, "era": config.era}
    if config.url:
        options["headers"] = dict(config.headers)
        options["sse"] = config.sse
    else:
        options["env"] = dict(config.env)
        options["cwd"] = config.cwd
    return options


def _expand(value: str, where: str) -> str:
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        return os.environ[name]

    return _VAR.sub(sub, value)


def str_map(value: object, where: str, *, expand: bool) -> dict[str, str]:
    """An object of strings (numbers and booleans written as strings), ``${VAR}`` expanded
    when ``expand``; a :class:`ConfigError` naming ``where`` otherwise."""
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
    """``argv`` with a bare ``python``/``python3``/``mcpkit`` replaced by this process's own
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


def _argv(item: dict[str, Any], command: Any, where: str) -> tuple[str, ...]:
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}.command must be a non-empty string")
    args = item.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise ConfigError(f"{where}.args must be a list of strings")
    # A bare command line ("python server.py") is common in hand-written files.
    head = shlex.split(command) if not args and " " in command.strip() else [command]
    return (*head, *(str(a) for a in args))


def check_name(name: object) -> None:
    """Server names become the namespace of their tools, so they must be safe in one."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"mcpServers.{name}: a server name must match {_NAME.pattern}")


def parse_server(name: str, item: object) -> ServerConfig:
    """One ``mcpServers`` entry: how to reach the server (other keys are ignored here)."""
    where = f"mcpServers.{name}"
    check_name(name)
    if not isinstance(item, dict):
        raise ConfigError(f"{where} must be an object")
    kind = item.get("type") or item.get("transport")
    url, command = item.get("url") or item.get("serverUrl"), item.get("command")
    if (url is None) == (command is None):
        raise ConfigError(f"{where} needs exactly one of command (stdio) or url (HTTP)")
    if kind is not None and kind not in _TYPES:
        raise ConfigError(f"{where}.type {kind!r} is not supported (stdio, http or sse)")
    if kind == "sse" and url is None:
        raise ConfigError(f"{where}: type sse needs a url (the server's /sse endpoint)")
    argv: tuple[str, ...] = ()
    if command is not None:
        argv = _argv(item, command, where)
    elif not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url must be an http(s) URL")
    argv, resolved_from = resolve_command(argv)
    timeout = item.get("timeout", 60.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{where}.timeout must be a positive number of seconds")
    era = item.get("era", "auto")
    if era not in ("auto", "modern", "legacy"):
        raise ConfigError(f"{where}.era must be auto, modern or legacy")
    cwd = item.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{where}.cwd must be a string")
    return ServerConfig(
        name=name,
        command=argv,
        env=str_map(item.get("env"), f"{where}.env", expand=True),
        cwd=cwd,
        url=url,
        headers=str_map(item.get("headers"), f"{where}.headers", expand=True),
        sse=kind == "sse",
        timeout=float(timeout),
        era=era,
        disabled=bool(item.get("disabled", False)),
        resolved_from=resolved_from,
    )


def server_entries(data: object) -> dict[Any, Any]:
    """The ``mcpServers`` object of a configuration (``servers`` is accepted too, as some
    hosts write it), not yet parsed."""
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a JSON object")
    raw = data.get("mcpServers", data.get("servers", {}))
    if not isinstance(raw, dict):
        raise ConfigError("mcpServers must be an object keyed by server name")
    return raw


def read_config(path: str | os.PathLike[str]) -> Any:
    """A configuration file's JSON; a :class:`ConfigError` naming the file otherwise."""
    file = Path(path)
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: {exc}") from None
