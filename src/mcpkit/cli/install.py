"""``mcpkit install CLIENT FILE``: add a server to a desktop host's configuration.

Each host keeps its servers in a JSON file at a per-OS location.  We merge one entry into
that file: other entries and other settings are kept as they are, a copy of the old file
is saved beside it first (``<file>.bak``), and a file that is not valid JSON is refused
rather than overwritten.  The entry launches the server with this interpreter's absolute
path (``/path/to/python -m mcpkit serve /abs/demo.py``), so a host whose PATH lacks ``uv``
or the virtualenv (the usual case for a desktop app) still starts it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..types.extras import require
from .command import Command, add_list_option
from .exits import EXIT_OK, EXIT_USAGE
from .proxy import is_remote_url
from .target import TargetError, importable_from_cwd, load_server


def _config_home() -> Path:
    """Where per-user settings live: %APPDATA%, ~/Library/Application Support, XDG."""
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


@dataclass(frozen=True)
class HostKind:
    """One desktop host: where its file is, which key holds servers, how an entry looks."""

    title: str
    path: Callable[[], Path]
    key: str = "mcpServers"
    #: Hosts that want ``"type": "stdio"`` on a command entry.
    typed: bool = False


HOSTS: dict[str, HostKind] = {
    "claude-desktop": HostKind(
        "Claude Desktop", lambda: _config_home() / "Claude" / "claude_desktop_config.json"
    ),
    "claude-code": HostKind(
        "Claude Code (user scope)", lambda: Path.home() / ".claude.json", typed=True
    ),
    "cursor": HostKind("Cursor", lambda: Path.home() / ".cursor" / "mcp.json"),
    "vscode": HostKind(
        "VS Code (user profile)",
        lambda: _config_home() / "Code" / "User" / "mcp.json",
        key="servers",
        typed=True,
    ),
    "gemini-cli": HostKind("Gemini CLI", lambda: Path.home() / ".gemini" / "settings.json"),
}

_EXAMPLES = [
    "mcpkit install claude-desktop demo.py",
    "mcpkit install cursor demo.py:server --name notes --env API_KEY=... --env-file .env",
    "mcpkit install vscode pkg.module:app --with httpx",
    "mcpkit install json demo.py            # print the mcpServers entry, write nothing",
]


class InstallError(Exception):
    pass


def _notes() -> str:
    """Where each host keeps its servers, under the home folder of the moment."""
    where = "".join(f"  {name:<15} {host.path()}\n" for name, host in HOSTS.items())
    return (
        "where each client keeps its servers (on this machine):\n"
        + where
        + "\nexit status: 0 ok, 2 bad usage or a config file that "
        "cannot be merged safely (nothing is written then)."
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "client",
        choices=[*HOSTS, "json"],
        metavar="CLIENT",
        help=f"one of: {', '.join([*HOSTS, 'json'])}",
    )
    p.add_argument(
        "target",
        metavar="FILE",
        help="the server, as `mcpkit serve` takes it: demo.py[:name] or pkg.mod:name; or "
        "a remote server's http(s) URL (run through `mcpkit proxy URL`, which logs in)",
    )
    p.add_argument("--name", help="the entry's name (default: the server's own name)")
    add_list_option(
        p, "--env", metavar="KEY=VALUE", help="environment variable for the server (repeatable)"
    )
    p.add_argument("--env-file", metavar="FILE", help="read KEY=VALUE lines (a .env file)")
    add_list_option(
        p,
        "--with",
        metavar="PKG",
        dest="with_packages",
        help="pip-install PKG into this interpreter first",
    )
    p.add_argument(
        "--config-path",
        metavar="PATH",
        help="the client's config file, when it is not at the usual place",
    )
    p.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that runs the server (default: this one, %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        name, entry = build_entry(args)
        if args.client == "json":
            print(json.dumps({"mcpServers": {name: entry}}, indent=2, ensure_ascii=False))
            return EXIT_OK
        host = HOSTS[args.client]
        path = Path(args.config_path) if args.config_path else host.path()
        if host.typed:
            entry = {"type": "stdio", **entry}
        replaced, backup = merge_entry(path, host.key, name, entry)
    except InstallError as exc:
        print(f"mcpkit install: {exc}", file=sys.stderr)
        return EXIT_USAGE
    verb = "replaced" if replaced else "added"
    print(
        f"mcpkit install: {verb} {name!r} in {host.title}'s {path}"
        + (f" (previous file kept as {backup})" if backup else ""),
        file=sys.stderr,
    )
    print(f"  command: {entry['command']} {' '.join(entry['args'])}", file=sys.stderr)
    print(f"  restart {host.title} to load it.", file=sys.stderr)
    return EXIT_OK


def build_entry(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The entry's name and its ``{"command", "args", "env"}``."""
    for package in args.with_packages:
        _pip_install(args.python, package)
    if is_remote_url(args.target):  # a remote server: `mcpkit proxy URL` logs in for the host
        remote: dict[str, Any] = {
            "command": _python(args),
            "args": ["-m", "mcpkit", "proxy", args.target],
        }
        if env := _env(args):
            remote["env"] = env
        return args.name or urlsplit(args.target).hostname or "remote", remote
    target, module_dir = _absolute_target(args.target)
    try:
        server = load_server(args.target)
    except TargetError as exc:
        raise InstallError(str(exc)) from None
    except Exception as exc:  # the user's file failed while importing: say so, plainly
        raise InstallError(f"{args.target} failed to import: {type(exc).__name__}: {exc}") from None
    env = _env(args)
    if module_dir is not None:
        env.setdefault("PYTHONPATH", module_dir)
    entry: dict[str, Any] = {"command": _python(args), "args": ["-m", "mcpkit", "serve", target]}
    if env:
        entry["env"] = env
    return args.name or server.name, entry


def _python(args: argparse.Namespace) -> str:
    python = shutil.which(args.python) or args.python
    return str(Path(python).absolute())


def _env(args: argparse.Namespace) -> dict[str, str]:
    env: dict[str, str] = {}
    if args.env_file:
        env.update(_read_env_file(args.env_file))
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InstallError(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    return env


def _absolute_target(target: str) -> tuple[str, str | None]:
    """A target that works from any working directory, and the folder a module target
    needs on PYTHONPATH (None when it is importable as installed)."""
    spec, sep, obj = target.partition(":")
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec)
        if not path.is_file():
            raise InstallError(f"no such file: {spec}")
        return str(path.resolve()) + sep + obj, None
    import importlib.util

    importable_from_cwd()
    here = str(Path.cwd())
    try:
        found = importlib.util.find_spec(spec.split(".")[0])
    except (ImportError, ValueError):
        found = None
    if found is None or found.origin is None:
        raise InstallError(f"cannot find module {spec!r} (run from the folder that holds it)")
    local = Path(found.origin).resolve().is_relative_to(here)
    return target, here if local else None


def _read_env_file(path: str) -> dict[str, str]:
    if not Path(path).is_file():
        raise InstallError(f"--env-file {path}: no such file")
    dotenv = require("dotenv", "cli", "--env-file")
    values = dotenv.dotenv_values(path)
    return {key: value or "" for key, value in values.items()}


def _pip_install(python: str, package: str) -> None:
    print(f"mcpkit install: pip install {package} (into {python})", file=sys.stderr)
    done = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", package], stdout=sys.stderr, check=False
    )
    if done.returncode != 0:
        raise InstallError(f"--with {package}: pip install failed (exit {done.returncode})")


def merge_entry(path: Path, key: str, name: str, entry: dict[str, Any]) -> tuple[bool, Path | None]:
    """Put ``entry`` at ``config[key][name]``; (replaced an entry, backup path or None).

    Refuses (InstallError, file untouched) when the file is not a JSON object or its
    ``key`` is not an object: we cannot merge into what we do not understand.
    """
    config: dict[str, Any] = {}
    backup = None
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if text.strip():
            try:
                loaded = json.loads(text)
            except ValueError as exc:
                raise InstallError(
                    f"{path} is not valid JSON ({exc}); fix or move it, nothing was written"
                ) from None
            if not isinstance(loaded, dict):
                raise InstallError(f"{path} is not a JSON object; nothing was written")
            config = loaded
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    servers = config.setdefault(key, {})
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: {key!r} is not an object; nothing was written")
    replaced = name in servers
    servers[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_private(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    return replaced, backup


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a scratch file renamed over it).  The
    entries' ``env`` holds secrets, so a file created here is 0600 (owner only) whatever
    the umask; an existing file keeps its mode."""
    scratch = path.with_name(f".{path.name}.mcpkit-tmp")
    scratch.unlink(missing_ok=True)  # a leftover of an interrupted run, maybe not ours
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    if path.exists():
        shutil.copymode(path, scratch)
    os.replace(scratch, path)


COMMAND = Command(
    "install",
    help="add a server to Claude Desktop, Claude Code, Cursor, VS Code, ...",
    description="Add a server file or module to a desktop host's MCP configuration "
    "(merged with what is there; a backup is kept).",
    examples=_EXAMPLES,
    notes=_notes,
    arguments=add_arguments,
    run=run,
)
