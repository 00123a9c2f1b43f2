"""How every ``mcpkit`` subcommand presents itself, written once: its one-line help, its
description, and an epilog of example command lines (then any notes) printed as laid
out here, not re-wrapped.

A command module ends with its :class:`Command`: what it is, which arguments it takes
and what it runs; :func:`register` turns that into a subparser, the same way for every
command (see ``main.build_parser``)."""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeAlias

__all__ = [
    "Command",
    "Parser",
    "Subcommands",
    "add_command",
    "add_list_option",
    "mcpkit_command",
    "register",
]


class Parser(argparse.ArgumentParser):
    """Every ``mcpkit`` parser: a usage error is ``mcpkit CMD: what is wrong`` then the
    usage line, exit status 2, the same shape as the errors the commands raise themselves."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n{self.format_usage()}")


def mcpkit_command() -> str:
    """How the person reaches this ``mcpkit`` from a new shell: ``mcpkit`` when that name
    on PATH is this very program; else the path it was started by (``.venv/bin/mcpkit``,
    as ``make run`` starts it); else ``python -m mcpkit`` with this interpreter."""
    on_path = shutil.which("mcpkit")
    script = Path(sys.argv[0])
    if script.name == "mcpkit":
        if on_path and Path(on_path).resolve() == script.resolve():
            return "mcpkit"
        return shlex.quote(str(script))
    if on_path and Path(on_path).parent == Path(sys.executable).parent:
        return "mcpkit"
    return f"{shlex.quote(sys.executable)} -m mcpkit"


#: The ``add_subparsers()`` object each command module adds itself to.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


@dataclass(frozen=True)
class Command:
    """What ``mcpkit --help`` and ``mcpkit NAME --help`` say about one subcommand.

    ``notes`` may be a function when what it says is only known when the parser is built
    (``install`` lists the config paths under the current home folder)."""

    name: str
    help: str
    description: str
    examples: Sequence[str]
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    notes: str | Callable[[], str] = ""


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


def register(sub: Subcommands, command: Command) -> None:
    """Add ``command`` with its arguments; parsing it selects ``command.run``."""
    notes = command.notes() if callable(command.notes) else command.notes
    parser = add_command(
        sub,
        command.name,
        help=command.help,
        description=command.description,
        examples=command.examples,
        notes=notes,
    )
    command.arguments(parser)
    parser.set_defaults(func=command.run)


def add_list_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *flags: str,
    help: str,
    metavar: str | None = None,
    dest: str | None = None,
    default: object = None,
) -> None:
    """An option that may be given many times, each value appended to a list (empty when
    it is not given; ``default`` replaces that list, e.g. with ``argparse.SUPPRESS``)."""
    parser.add_argument(
        *flags,
        action="append",
        default=[] if default is None else default,
        metavar=metavar,
        dest=dest,
        help=help,
    )
