"""A small stdio server for ``Client.from_config`` tests; ``ROLE`` (from the config's
``env``) names it, so two entries of the same file are two distinguishable servers."""

from __future__ import annotations

import os
from typing import Any

from mcpkit import Server

ROLE = os.environ.get("ROLE", "unset")
server = Server(f"config-{ROLE}")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers (every role has this tool: the names must not clash)."""
    return a + b


@server.tool()
def whoami() -> str:
    """The role this process was started with."""
    return ROLE


@server.resource("data://readme")
def readme() -> str:
    return f"readme of {ROLE}"


@server.resource("data://items/{item}")
def item(item: str) -> str:
    return f"{ROLE} item {item}"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"{ROLE} greets {name}"


@server.completion
def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
    return [f"{ROLE}-{argument['value']}"]


if __name__ == "__main__":
    server.run()
