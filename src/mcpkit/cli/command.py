"""How every ``mcpkit`` subcommand presents itself, written once: its one-line help, its
description, and an epilog of example command lines (then any notes) printed as laid
out here, not re-wrapped."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TypeAlias

__all__ = ["Subcommands", "add_command"]

#: The ``add_subparsers()`` object each command module adds itself to.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_command(
    sub: Subcommands,
    name: str,
    *,
    help: str,
    description: str,
    examples: Sequence[str],
    notes: str = "",
    usage: str | None = None,
) -> argparse.ArgumentParser:
    """Add the subcommand ``name``: ``examples`` (command lines, with their comments)
    under "examples:", then ``notes`` after a blank line."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    if notes:
        epilog += "\n\n" + notes
    return sub.add_parser(
        name,
        help=help,
        description=description,
        usage=usage,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
