"""Trust before launch: a config file must not run a command on this machine unseen.

A ``mcpServers`` file can come from anywhere (a cloned repository, a colleague), and a stdio
server is a program run with the person's rights.  So the first time the host is asked to
start a command it has not seen, the person confirms it (in the terminal or the page),
like VS Code's "trust this server" step.

What is trusted is the exact launch (:func:`launch_of`):

* the executable as it resolves (a bare name looked up on the ``PATH`` the server gets, a
  relative path against the working directory);
* the arguments;
* the working directory, made absolute (the host's own when the config names none: the same
  config run from another folder runs other files);
* the environment the config gives, names and values, plus the loader variables the server
  inherits (``PYTHONPATH``, ``NODE_OPTIONS``, ``LD_PRELOAD``...); values are kept only as
  salted hashes, never in clear;
* the content of each local script the command runs: every argument naming an existing
  file, and the executable itself when it is a script (``#!``).

Change any of them and the person is asked again, shown what changed
(:meth:`TrustStore.changes`).  One spelling is forgiven: a virtualenv's ``python``,
``python3`` and ``python3.X`` are one interpreter, so an absolute path to any of them is
keyed as the ``python`` beside it when both are the same file.

Trust is remembered per user in a JSON file: ``$MCPKIT_TRUST_FILE``, else
``$XDG_CONFIG_HOME/mcpkit/trusted-servers.json`` (``~/.config`` by default), written 0600.
``mcpkit host --reset-trust`` forgets it all.  HTTP servers are not launched, so they need
no trust step (their permissions still apply to every call).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .config import ServerConfig, user_file

__all__ = ["TrustStore", "default_trust_file", "launch_of", "trust_key"]

#: Inherited variables that change what a launched program loads, so they are part of it.
LOADER_VARIABLES = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "NODE_OPTIONS",
    "NODE_PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
)


def default_trust_file() -> Path:
    return user_file("MCPKIT_TRUST_FILE", "trusted-servers.json")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str | None:
    """The content hash of a regular file, None when it is not one (or unreadable)."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def _is_script(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(2) == b"#!"
    except OSError:
        return False


def _resolve_executable(program: str, cwd: Path, environ: Mapping[str, str]) -> str:
    """Where ``program`` is found: on ``PATH`` for a bare name, under ``cwd`` for a
    relative path; a name found nowhere is kept as given (the launch will fail)."""
    if os.sep not in program and "/" not in program:
        found = shutil.which(program, path=environ.get("PATH", os.defpath))
        return _interpreter_spelling(found) if found else program
    path = Path(program)
    return _interpreter_spelling(str(path if path.is_absolute() else cwd / path))


def launch_of(
    config: ServerConfig,
    *,
    cwd: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    salt: str = "",
) -> dict[str, Any]:
    """The launch a person approves for a stdio server (see the module doc).  ``cwd`` and
    ``environ`` are the host's own (default: this process's); environment values appear
    only as hashes salted with ``salt``."""
    inherited = os.environ if environ is None else environ
    where = (Path(cwd or os.getcwd()) / (config.cwd or "")).absolute()
    effective = {**inherited, **config.env}
    executable = _resolve_executable(config.command[0], where, effective) if config.command else ""
    arguments = list(config.command[1:])
    env = {name: _digest(f"{salt}\0{name}\0{value}".encode()) for name, value in config.env.items()}
    for name in LOADER_VARIABLES:
        if name not in config.env and inherited.get(name):
            env[name] = _digest(f"{salt}\0{name}\0{inherited[name]}".encode())
    scripts: dict[str, str] = {}
    candidates = [*arguments, *([executable] if _is_script(Path(executable)) else [])]
    for item in candidates:
        path = Path(item) if Path(item).is_absolute() else where / item
        content = _file_digest(path) if item and not item.startswith("-") else None
        if content is not None:
            scripts[str(path)] = content
    return {
        "executable": executable,
        "arguments": arguments,
        "cwd": str(where),
        "env": dict(sorted(env.items())),
        "scripts": dict(sorted(scripts.items())),
    }


def trust_key(
    config: ServerConfig,
    *,
    cwd: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    salt: str = "",
) -> str:
    """The hash of :func:`launch_of`: equal keys mean the very same launch."""
    launch = launch_of(config, cwd=cwd, environ=environ, salt=salt)
    return _digest(json.dumps(launch, sort_keys=True).encode())


_PYTHON_NAME = re.compile(r"python(3(\.\d+)?)?")


def _interpreter_spelling(program: str) -> str:
    """``/venv/bin/python3.11`` -> ``/venv/bin/python`` when that is the same file; any
    other program as given (a ``python`` that is another file)."""
    path = Path(program)
    if not path.is_absolute() or not _PYTHON_NAME.fullmatch(path.name):
        return program
    plain = path.with_name("python")
    try:
        return str(plain) if plain != path and os.path.samefile(plain, path) else program
    except OSError:
        return program


def describe_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between two :func:`launch_of` records, one line per difference."""
    out = []
    for field, label in (("executable", "executable"), ("cwd", "working directory")):
        if before.get(field) != after.get(field):
            out.append(f"{label}: {before.get(field)} -> {after.get(field)}")
    if before.get("arguments") != after.get("arguments"):
        old, new = before.get("arguments") or [], after.get("arguments") or []
        out.append(f"arguments: {' '.join(old)} -> {' '.join(new)}")
    out += _mapping_changes("environment variable", before.get("env"), after.get("env"))
    out += _mapping_changes("script", before.get("scripts"), after.get("scripts"), "content")
    return out


def _mapping_changes(label: str, before: Any, after: Any, what: str = "value") -> list[str]:
    old = before if isinstance(before, Mapping) else {}
    new = after if isinstance(after, Mapping) else {}
    out = [f"{label} {name}: new" for name in sorted(set(new) - set(old))]
    out += [f"{label} {name}: gone" for name in sorted(set(old) - set(new))]
    out += [
        f"{label} {name}: {what} changed"
        for name in sorted(set(old) & set(new))
        if old[name] != new[name]
    ]
    return out


class TrustStore:
    """The launches this user has trusted, in a small JSON file (0600).

    ``cwd`` and ``environ`` are the host's working directory and environment (default:
    this process's), against which a server's launch is resolved."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        cwd: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_trust_file()
        self.cwd = cwd
        self.environ = environ

    def _load(self) -> dict[str, Any]:
        """``{"salt": ..., "launches": {key: record}}``; a file of another shape (an older
        version's) trusts nothing."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("launches"), dict):
            return {"salt": secrets.token_hex(16), "launches": {}}
        if not isinstance(data.get("salt"), str):
            data["salt"] = secrets.token_hex(16)
        return data

    def _launch(self, config: ServerConfig, salt: str) -> tuple[str, dict[str, Any]]:
        launch = launch_of(config, cwd=self.cwd, environ=self.environ, salt=salt)
        return _digest(json.dumps(launch, sort_keys=True).encode()), launch

    def needs_trust(self, config: ServerConfig) -> bool:
        """True when this exact launch of a stdio server has not been trusted by this user
        yet; URL servers need none."""
        if config.transport != "stdio":
            return False
        data = self._load()
        return self._launch(config, data["salt"])[0] not in data["launches"]

    def changes(self, config: ServerConfig) -> list[str]:
        """What changed since this server (by name) was last trusted; empty when it never
        was (or nothing did)."""
        data = self._load()
        _, launch = self._launch(config, data["salt"])
        earlier = [
            r
            for r in data["launches"].values()
            if isinstance(r, dict) and r.get("server") == config.name
        ]
        if not earlier:
            return []
        latest = max(earlier, key=lambda r: r.get("trustedAt", 0))
        return describe_changes(latest.get("launch") or {}, launch)

    def trust(self, config: ServerConfig) -> None:
        """Remember this exact launch as trusted (written atomically, 0600)."""
        data = self._load()
        key, launch = self._launch(config, data["salt"])
        data["launches"][key] = {
            "server": config.name,
            "command": config.describe(),
            "launch": launch,
            "trustedAt": time.time(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=1))
        tmp.replace(self.path)

    def reset(self) -> int:
        """Forget every trusted launch; returns how many there were."""
        count = len(self._load()["launches"])
        self.path.unlink(missing_ok=True)
        return count
