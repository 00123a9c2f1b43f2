"""``mcpkit list | call | read | prompt | inspect``: poke at any MCP server from the shell.

A TARGET is what ``mcpkit serve`` takes (``demo.py``, ``demo.py:server``, ``pkg.mod:app``:
the file is served over stdio with this interpreter), an ``http(s)://`` URL, a quoted
command line, or a command after ``--``.

``key=value`` arguments are converted with the input schema (a ``string`` stays a string
even if it looks like a number); ``key:=JSON`` passes raw JSON.  Output is meant for people;
``--json`` prints JSON for scripts.  Requests for input (elicitation) are asked on the
terminal; ``--no-input`` declines them.  Progress and server log messages go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from . import output
from .command import add_command, add_list_option
from .exits import EXIT_CODES_HELP, EXIT_CONNECTION, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError
from .failures import explain
from .pairs import json_object, parse_pairs
from .terminal import TerminalUI

if TYPE_CHECKING:  # the client stack loads only for these commands, not for `serve`
    import httpx

    from ..client import Client

_TARGET_HELP = (
    """\
TARGET is a server file or module as `mcpkit serve` takes it (demo.py, demo.py:server,
pkg.mod:app), an http(s):// URL, a quoted command line ("npx -y some-server"), or the
command after `--`.

"""
    + EXIT_CODES_HELP
)

_COMMANDS: dict[str, tuple[str, str, list[str]]] = {
    # name: (summary, usage, examples)
    "list": (
        "list a server's tools, prompts and resources",
        "mcpkit list [options] TARGET\n       mcpkit list [options] -- COMMAND [ARG...]",
        [
            "mcpkit list demo.py",
            "mcpkit list http://127.0.0.1:8000/mcp --json",
            "mcpkit list -- npx -y @modelcontextprotocol/server-everything",
        ],
    ),
    "call": (
        "call a tool and print its result",
        "mcpkit call [options] TARGET TOOL [key=value | key:=JSON ...]\n"
        "       mcpkit call [options] TOOL [key=value ...] -- COMMAND [ARG...]",
        [
            "mcpkit call demo.py add a=1 b=2",
            "mcpkit call demo.py greet              # asks for your name on the terminal",
            'mcpkit call URL search filters:=\'{"tag": "x"}\' --json',
            'mcpkit call demo.py add --args \'{"a": 1, "b": 2}\'   # no tools/list first',
        ],
    ),
    "read": (
        "read a resource and print its contents",
        "mcpkit read [options] TARGET URI",
        [
            "mcpkit read demo.py note://today",
            "mcpkit read http://127.0.0.1:8000/mcp file:///a.txt --json",
        ],
    ),
    "prompt": (
        "get a prompt with arguments and print its messages",
        "mcpkit prompt [options] TARGET NAME [key=value ...]",
        ["mcpkit prompt demo.py summarize text='MCP connects models to tools'"],
    ),
    "inspect": (
        "report everything a server offers (capabilities, full schemas); --json is stable",
        "mcpkit inspect [options] TARGET",
        ["mcpkit inspect demo.py", "mcpkit inspect demo.py --json > server.json   # diff it in CI"],
    ),
}


if TYPE_CHECKING:
    #: A subcommand: its parsed arguments in, the exit status out.
    Command = Callable[[argparse.Namespace], Awaitable[int]]


def _options(parser: argparse.ArgumentParser, default: object = None) -> None:
    def d(value: object) -> object:
        return value if default is None else default

    parser.add_argument(
        "--json", action="store_true", default=d(False), help="print JSON instead of text"
    )
    parser.add_argument(
        "--era",
        choices=("auto", "modern", "legacy"),
        default=d("auto"),
        help="protocol era (default: probe, then fall back)",
    )
    parser.add_argument(
        "--timeout", type=float, default=d(60.0), help="seconds per request (default 60)"
    )
    for flags, metavar, what in (
        (("-H", "--header"), "'NAME: VALUE'", "extra HTTP header"),
        (("-e", "--env"), "KEY=VALUE", "environment variable for a stdio server"),
    ):
        add_list_option(
            parser, *flags, metavar=metavar, default=default, help=f"{what} (repeatable)"
        )
    parser.add_argument(
        "--no-input",
        action="store_true",
        default=d(False),
        help="decline the server's requests for input instead of asking",
    )
    parser.add_argument(
        "--log-level",
        default=d(None),
        choices=("debug", "info", "notice", "warning", "error"),
        help="show the server's log messages at this level and above",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=d(False),
        help="log the protocol exchange to stderr",
    )


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    runners = {"list": _list, "call": _call, "read": _read, "prompt": _prompt, "inspect": _inspect}
    for name, (summary, usage, examples) in _COMMANDS.items():
        p = add_command(
            sub,
            name,
            help=summary,
            description=summary,
            usage=usage,
            examples=examples,
            notes=_TARGET_HELP,
        )
        _options(p)
        if name == "call":
            p.add_argument("--args", metavar="JSON", help="all arguments as one JSON object")
        p.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(func=_runner(runners[name]), command_name=name)


def _runner(coro_fn: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        return _run(coro_fn, args)

    return run


def _split(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """Positional words before ``--`` (options there are honoured too) and the command."""
    argv: list[str] = list(args.argv)
    command = None
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
        if not command:
            raise UsageError("nothing after --: give the server command")
    again = argparse.ArgumentParser(add_help=False, prog=f"mcpkit {args.command_name}")
    _options(again, default=argparse.SUPPRESS)
    again.add_argument("--args", default=argparse.SUPPRESS)
    again.add_argument("words", nargs="*")
    try:
        late, unknown = again.parse_known_intermixed_args(argv)
    except SystemExit:
        raise UsageError("bad options") from None
    if unknown:
        raise UsageError(f"unknown option {unknown[0]!r}")
    words = late.words
    del late.words
    vars(args).update(vars(late))
    return words, command


def _named(
    args: argparse.Namespace, word: str, missing: str
) -> tuple[str | list[str], str, list[str]]:
    """(target, NAME, key=value words) for ``call`` and ``prompt``: TARGET NAME [k=v ...]."""
    words, command = _split(args)
    target, rest = _target(words, command, word)
    if not rest:
        raise UsageError(missing)
    return target, rest[0], rest[1:]


def _target(
    words: list[str], command: list[str] | None, rest: str
) -> tuple[str | list[str], list[str]]:
    """(target, remaining words) for a command whose words after TARGET are ``rest``."""
    if command is not None:
        return command, words
    if not words:
        raise UsageError("give TARGET" + (f" and {rest}" if rest else ""))
    return words[0], words[1:]


#: ``scheme://`` at the start of a TARGET: a URL, of which only http(s) is served.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _login(target: str | list[str], headers: dict[str, str]) -> httpx.Auth | None:
    """OAuth (browser on first use, the user's token store) for a URL, unless the
    command line gives its own ``Authorization`` header."""
    from .proxy import is_remote_url, login_auth

    if not isinstance(target, str) or not is_remote_url(target):
        return None
    if any(name.lower() == "authorization" for name in headers):
        return None
    return login_auth(target, client_name="mcpkit cli")


def _client(target: str | list[str], args: argparse.Namespace, ui: TerminalUI) -> Client:
    from ..client import Client

    if isinstance(target, str):
        url = _URL.match(target)
        if url and url.group(1).lower() not in ("http", "https"):
            raise UsageError(
                f"unsupported URL scheme {url.group(1)!r} in {target} "
                "(give an http(s):// URL, a server file or module, or a command)"
            )
    args.resolved_target = target

    headers = {}
    for item in args.header:
        name, sep, value = item.partition(":")
        if not sep:
            raise UsageError(f"--header {item!r}: expected 'Name: value'")
        headers[name.strip()] = value.strip()
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    return Client(
        target,
        era=args.era,
        timeout=args.timeout,
        headers=headers,
        auth=_login(target, headers),
        env=env or None,
        elicitation=ui.ask_form,
        url_elicitation=ui.show_url,
        on_log=ui.on_log,
        log_level=args.log_level,
    )


def _run(coro_fn: Command, args: argparse.Namespace) -> int:
    from ..auth.client.errors import NoOAuthOffered, OAuthError
    from ..client import (
        ClientError,
        RequestTimeoutError,
        ServerError,
        TransportError,
        VersionNegotiationError,
    )
    from ..client.errors import unwrap

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(name)s: %(message)s",
    )
    name = args.command_name
    try:
        try:
            return int(anyio.run(coro_fn, args))
        except BaseExceptionGroup as group:
            raise unwrap(group) from None
    except UsageError as exc:
        print(f"mcpkit {name}: {exc}\nusage: {_COMMANDS[name][1]}", file=sys.stderr)
        return EXIT_USAGE
    except (TransportError, RequestTimeoutError, VersionNegotiationError) as exc:
        print(f"mcpkit {name}: {explain(args, exc)}", file=sys.stderr)
        return EXIT_CONNECTION
    except ServerError as exc:
        said = f"the server answered error {exc.code}: {exc.message}"
        explained = explain(args, exc, said)
        print(f"mcpkit {name}: {explained}", file=sys.stderr)
        return EXIT_FAILURE if explained == said else EXIT_CONNECTION  # not an MCP endpoint
    except ClientError as exc:
        print(f"mcpkit {name}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except NoOAuthOffered:
        print(
            f"mcpkit {name}: the server needs credentials and offers no OAuth sign-in (no "
            'RFC 9728 metadata); pass them with -H "Authorization: Bearer TOKEN"',
            file=sys.stderr,
        )
        return EXIT_FAILURE
    except OAuthError as exc:
        print(f"mcpkit {name}: sign-in failed: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def _ui(args: argparse.Namespace) -> TerminalUI:
    return TerminalUI(interactive=not args.no_input)


# ---------------------------------------------------------------------- list / inspect


async def _list(args: argparse.Namespace) -> int:
    words, command = _split(args)
    target, rest = _target(words, command, "")
    if rest:
        raise UsageError(
            f"unexpected {rest[0]!r} after TARGET (quote a command line, or "
            "put the command after --)"
        )
    async with _client(target, args, _ui(args)) as client:
        report = await _survey(client)
    if args.json:
        output.emit_json(report)
    else:
        output.print_listing(report["server"], report, report["droppedTools"])
    return EXIT_OK


async def _inspect(args: argparse.Namespace) -> int:
    words, command = _split(args)
    target, rest = _target(words, command, "")
    if rest:
        raise UsageError(f"unexpected {rest[0]!r} after TARGET")
    async with _client(target, args, _ui(args)) as client:
        report = await _survey(client)
    for key, field in (
        ("tools", "name"),
        ("prompts", "name"),
        ("resources", "uri"),
        ("resourceTemplates", "uriTemplate"),
    ):
        report[key] = sorted(report[key], key=_by(field))
    if args.json:
        output.emit_json(report, sort_keys=True)
    else:
        output.print_inspection(report)
    return EXIT_OK


def _by(field: str) -> Callable[[dict[str, Any]], str]:
    return lambda item: str(item.get(field))


async def _survey(client: Client) -> dict[str, Any]:
    """Everything a server offers, in one JSON-ready dict."""
    info = client.server_info
    report: dict[str, Any] = {"tools": [], "prompts": [], "resources": [], "resourceTemplates": []}
    if info.supports("tools"):
        report["tools"] = await client.list_tools()
    if info.supports("prompts"):
        report["prompts"] = await client.list_prompts()
    if info.supports("resources"):
        report["resources"] = await client.list_resources()
        report["resourceTemplates"] = await _optional(client.list_resource_templates())
    report["server"] = {
        "name": info.implementation.get("name"),
        "version": info.implementation.get("version"),
        "protocolVersion": info.protocol_version,
        "era": info.era,
        "capabilities": info.capabilities,
        "instructions": info.instructions,
    }
    report["droppedTools"] = dict(client.dropped_tools)
    return report


async def _optional(awaitable: Any) -> list[Any]:
    from ..client import ServerError

    try:
        return list(await awaitable)
    except ServerError as exc:  # e.g. a server without templates answering -32601
        logging.getLogger("mcpkit.cli").debug("skipped: %s", exc)
        return []


# ---------------------------------------------------------------------- call


async def _call(args: argparse.Namespace) -> int:
    from ..client import ServerError

    target, tool_name, pairs = _named(args, "TOOL", "give the TOOL to call")
    arguments = json_object(args.args, "--args") if args.args else {}
    ui = _ui(args)
    async with _client(target, args, ui) as client:
        if any(":=" not in pair for pair in pairs):
            # key=value words need the tool's input schema to get their types right;
            # JSON arguments alone go straight to tools/call.
            tools = await _tools_by_name(client)
            if tool_name not in tools:
                raise UsageError(_no_such_tool(tool_name, tools))
            schema = tools[tool_name].get("inputSchema") or {}
        else:
            schema = {}
        arguments.update(parse_pairs(pairs, schema, f"tool {tool_name!r}"))
        missing = [key for key in schema.get("required") or [] if key not in arguments]
        if missing:
            needs = " ".join(f"{key}=..." for key in missing)
            raise UsageError(f"tool {tool_name!r} needs {needs}")
        try:
            with ui.running():
                result = await client.call_tool(tool_name, arguments, on_progress=ui.on_progress)
        except ServerError as exc:
            if exc.code == -32602 and not schema:
                tools = await _tools_by_name(client)
                if tool_name not in tools:
                    raise UsageError(_no_such_tool(tool_name, tools)) from None
            raise
    if args.json:
        output.emit_json(result)
    else:
        output.print_result(dict(result), sys.stderr if result.get("isError") else sys.stdout)
    return EXIT_FAILURE if result.get("isError") else EXIT_OK


async def _tools_by_name(client: Client) -> dict[str, dict[str, Any]]:
    return {t["name"]: dict(t) for t in await client.list_tools()}


def _no_such_tool(name: str, tools: dict[str, Any]) -> str:
    known = ", ".join(sorted(tools)) or "(none)"
    return f"the server has no tool {name!r}; it has: {known}"


# ---------------------------------------------------------------------- read / prompt


async def _read(args: argparse.Namespace) -> int:
    words, command = _split(args)
    target, rest = _target(words, command, "URI")
    if len(rest) != 1:
        raise UsageError("give exactly one resource URI")
    async with _client(target, args, _ui(args)) as client:
        result = await client.read_resource(rest[0])
    if args.json:
        output.emit_json(result)
    else:
        for item in result.get("contents") or []:
            output.print_contents(dict(item), sys.stdout)
    return EXIT_OK


async def _prompt(args: argparse.Namespace) -> int:
    target, name, pairs = _named(args, "NAME", "give the prompt NAME")
    async with _client(target, args, _ui(args)) as client:
        prompts = {p["name"]: p for p in await client.list_prompts()}
        if name not in prompts:
            known = ", ".join(sorted(prompts)) or "(none)"
            raise UsageError(f"the server has no prompt {name!r}; it has: {known}")
        declared = [a["name"] for a in prompts[name].get("arguments") or []]
        arguments: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise UsageError(f"expected key=value, got {pair!r}")
            if declared and key not in declared:
                raise UsageError(
                    f"prompt {name!r} has no argument {key!r}; it takes: {', '.join(declared)}"
                )
            arguments[key] = value  # prompt arguments are strings by definition
        missing = [
            a["name"]
            for a in prompts[name].get("arguments") or []
            if a.get("required") and a["name"] not in arguments
        ]
        if missing:
            raise UsageError(f"prompt {name!r} needs {', '.join(f'{m}=...' for m in missing)}")
        result = await client.get_prompt(name, arguments)
    if args.json:
        output.emit_json(result)
    else:
        output.print_prompt(dict(result), sys.stdout)
    return EXIT_OK
