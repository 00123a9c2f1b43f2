"""``mcpkit auth doctor URL``: walk an MCP server's sign-in as a given client does and name
the step that fails, with its fix (see :mod:`mcpkit.auth.client.doctor`)."""

from __future__ import annotations

import argparse
import sys

from .command import Command, Subcommands, add_command
from .exits import EXIT_FAILURE, EXIT_OK
from .output import emit_json

_CLIENTS = ("claude", "chatgpt", "vscode", "inspector", "mcpkit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub: Subcommands = parser.add_subparsers(dest="auth_command", required=True, metavar="ACTION")
    doctor = add_command(
        sub,
        "doctor",
        help="check that a client can sign in to a protected MCP server",
        description=(
            "Walk discovery, registration and a token request the way CLIENT does and say, "
            "one line per step, what works (ok), what may hurt (warn) and what fails (FAIL) "
            "with its fix.  Exit status 0 when CLIENT would sign in, 1 otherwise."
        ),
        examples=[
            "mcpkit auth doctor https://mcp.example.com/mcp --client claude",
            "mcpkit auth doctor http://127.0.0.1:8000/mcp --json",
            "mcpkit auth doctor https://mcp.example.com/mcp --interactive   # sign in too",
        ],
    )
    doctor.add_argument("url", help="the MCP server's URL, as the client is given it")
    doctor.add_argument(
        "--client",
        choices=_CLIENTS,
        default="mcpkit",
        help="whose sign-in to walk (default mcpkit)",
    )
    doctor.add_argument(
        "--interactive",
        action="store_true",
        help="open the browser for the authorization step (default: only an authorization "
        "server that approves at once is walked past it)",
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from ..auth.client.doctor import diagnose

    report = diagnose(args.url, client=args.client, interactive=args.interactive)
    if args.json:
        emit_json(report.to_json())
    else:
        for finding in report.findings:
            print(finding.line())
        verdict = "would sign in" if report.ok else "would NOT sign in"
        print(f"\n{args.client} {verdict} to {args.url}")
    sys.stdout.flush()
    return EXIT_OK if report.ok else EXIT_FAILURE


COMMAND = Command(
    name="auth",
    help="OAuth tools: doctor (why a client cannot sign in)",
    description="OAuth tools for protected MCP servers.",
    examples=["mcpkit auth doctor https://mcp.example.com/mcp --client chatgpt"],
    arguments=add_arguments,
    run=run,
)
