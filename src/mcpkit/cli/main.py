"""Entry point of the ``mcpkit`` command."""

from __future__ import annotations

import argparse
import sys

from . import gateway, host_cmd, serve


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcpkit", description="Model Context Protocol toolkit")
    sub = parser.add_subparsers(dest="command", required=True)
    serve.add_parser(sub)
    gateway.add_parser(sub)
    host_cmd.add_parser(sub)
    try:
        from .client_cmds import add_parsers
    except ImportError:  # pragma: no cover - the client commands arrive separately
        pass
    else:
        add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
