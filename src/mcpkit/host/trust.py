"""Trust before launch: a config file must not run a command on this machine unseen.

A ``mcpServers`` file can come from anywhere (a cloned repository, a colleague), and a stdio
server is a program run with the person's rights.  So the first time the host is asked to
start a command it has not seen, the person confirms it (in the terminal or the page),
like VS Code's "trust this server" step.  What is trusted is the exact launch: the command
and its arguments, the *names* of the environment variables it gets (not their values,
which are often secrets that rotate) and the working directory.  Change any of them and
the person is asked again.  One spelling is forgiven: a virtualenv's ``python``,
``python3`` and ``python3.X`` are one interpreter, so an absolute path to any of them is
keyed as the ``python`` beside it when both are the same file.  Otherwise a host started
as ``.venv/bin/python3`` (whose bare ``python`` becomes that path) would ask again for a
server trusted from ``.venv/bin/mcpkit`` (whose interpreter is ``.venv/bin/python``).

Trust is remembered per user in a JSON file: ``$MCPKIT_TRUST_FILE``, else
``$XDG_CONFIG_HOME/mcpkit/trusted-servers.json`` (``~/.config`` by default).
``mcpkit host --reset-trust`` forgets it all.  HTTP servers are not launched, so they need
no trust step (their permissions still apply to every call).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from .config import ServerConfig, user_file

__all__ = ["TrustStore", "default_trust_file", "trust_key"]


def default_trust_file() -> Path:
    return user_file("MCPKIT_TRUST_FILE", "trusted-servers.json")


def trust_key(config: ServerConfig) -> str:
    """What a person approves when they trust a stdio server (see the module doc)."""
    command = list(config.command)
    if command:
        command[0] = _interpreter_spelling(command[0])
    seen = {"command": command, "env": sorted(config.env), "cwd": config.cwd or ""}
    return hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()


_PYTHON_NAME = re.compile(r"python(3(\.\d+)?)?")


def _interpreter_spelling(program: str) -> str:
    """``/venv/bin/python3.11`` -> ``/venv/bin/python`` when that is the same file; any
    other program as given (a relative name, or a ``python`` that is another file)."""
    path = Path(program)
    if not path.is_absolute() or not _PYTHON_NAME.fullmatch(path.name):
        return program
    plain = path.with_name("python")
    try:
        return str(plain) if plain != path and os.path.samefile(plain, path) else program
    except OSError:
        return program


class TrustStore:
    """The launches this user has trusted, in a small JSON file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_trust_file()

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def needs_trust(self, config: ServerConfig) -> bool:
        """True when this launch (a stdio server's command, arguments, environment names and
        cwd) has not been trusted by this user yet; URL servers need none."""
        return config.transport == "stdio" and trust_key(config) not in self._load()

    def trust(self, config: ServerConfig) -> None:
        """Remember this exact launch as trusted (written atomically to the file)."""
        data = self._load()
        data[trust_key(config)] = {
            "command": config.describe(),
            "env": sorted(config.env),
            "cwd": config.cwd,
            "trustedAt": int(time.time()),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        tmp.replace(self.path)

    def reset(self) -> int:
        """Forget every trusted launch; returns how many there were."""
        count = len(self._load())
        self.path.unlink(missing_ok=True)
        return count
