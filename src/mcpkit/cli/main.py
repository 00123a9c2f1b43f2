"""Entry point of the ``mcpkit`` command."""

from __future__ import annotations

import argparse
import os
import sys

from ..types.extras import MissingExtra
from . import (
    auth_doctor,
    client_cmds,
    dev,
    gateway,
    host_cmd,
    install,
    pack,
    proxy,
    publish,
    serve,
    worker,
)
from .command import Parser, Subcommands, register
from .exits import EXIT_BROKEN_PIPE, EXIT_CODES_HELP, EXIT_USAGE

_EXAMPLES = """\
examples:
  mcpkit serve demo.py                    serve a server file over stdio (desktop hosts)
  mcpkit serve demo.py --http             ... over Streamable HTTP at 127.0.0.1:8000/mcp
  mcpkit dev demo.py                      serve over HTTP, restart when the file changes
  mcpkit list demo.py                     what a server offers
  mcpkit call demo.py add a=1 b=2         call a tool
  mcpkit install claude-desktop demo.py   add the server to a desktop host's config

"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("mcpkit")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        ours = "(not installed)"
    return f"mcpkit {ours} (Python {sys.version.split()[0]})"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="mcpkit",
        description="Model Context Protocol toolkit: serve, call, install.",
        epilog=_EXAMPLES + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    sub: Subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    # The order of `mcpkit --help`'s command list; list, call, read, prompt and inspect
    # share their options and come from one table (client_cmds).
    register(sub, serve.COMMAND)
    register(sub, dev.COMMAND)
    client_cmds.add_parsers(sub)
    for module in (install, proxy, pack, publish, gateway, host_cmd, worker, auth_doctor):
        register(sub, module.COMMAND)
    return parser


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a non-UTF-8 terminal gets escapes, not a crash
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `mcpkit` alone: what it can do, not an error
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except MissingExtra as exc:
        print(f"mcpkit {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return 130


def _silence_stdout() -> None:
    """The reader went away: point stdout at /dev/null so the interpreter's final flush
    does not print a second BrokenPipeError on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
