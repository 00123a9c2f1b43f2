"""Settings a server declares: the environment variables it reads, described once.

``server.setting("API_KEY", description="...", secret=True)`` declares a variable and
returns a :class:`Setting` whose :attr:`~Setting.value` reads the environment when asked
(not at declaration, so that a tool sees the value of the process it runs in).  What is
declared is what ``mcpkit pack`` turns into a bundle's ``user_config`` (a host asks the
user for each one, a secret one masked) and ``mcpkit publish`` into the registry entry's
``environmentVariables``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["Setting"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Setting:
    """One environment variable the server reads."""

    name: str
    description: str
    secret: bool = False
    required: bool = True
    default: str | None = None
    title: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"setting name {self.name!r} is not an environment variable name")
        if not self.description.strip():
            raise ValueError(f"setting {self.name!r} needs a description (the user reads it)")
        if self.default is not None and self.required:
            raise ValueError(f"setting {self.name!r} has a default, so it cannot be required")

    @property
    def value(self) -> str | None:
        """The variable's value in this process, else the default (None when neither)."""
        return os.environ.get(self.name, self.default)
