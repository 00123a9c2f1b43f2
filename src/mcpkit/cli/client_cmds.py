"""``mcpkit list`` and ``mcpkit call``: poke at any MCP server from the shell.

::

    mcpkit list http://127.0.0.1:8000/mcp
    mcpkit list "python server.py"             # a command line: started over stdio
    mcpkit list -- python server.py --flag      # everything after -- is the command
    mcpkit call http://127.0.0.1:8000/mcp add a=1 b=2
    mcpkit call add a=1 b=2 -- python server.py
    mcpkit call URL search query:='{"q": "x"}' --json

``key=value`` arguments are converted with the tool's input schema (a ``string`` stays a
string even if it looks like a number); ``key:=JSON`` passes raw JSON.  Output is meant
for people; ``--json`` prints the results as JSON for scripts.  Exit status: 0 success,
1 failure (including a tool result with ``isError``), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:  # the client stack loads only for `list` / `call`, not for `serve`
    from ..client import Client
    from ..client.models import ElicitResult

_USAGE = {
    "list": "mcpkit list [options] TARGET\n       mcpkit list [options] -- COMMAND [ARG...]",
    "call": "mcpkit call [options] TARGET TOOL [key=value ...]\n"
            "       mcpkit call [options] TOOL [key=value ...] -- COMMAND [ARG...]",
}


class UsageError(Exception):
    pass


def _options(parser: argparse.ArgumentParser, default: Any = None) -> None:
    def d(value: Any) -> Any:
        return value if default is None else default

    parser.add_argument("--json", action="store_true", default=d(False),
                        help="print JSON instead of text")
    parser.add_argument("--era", choices=("auto", "modern", "legacy"), default=d("auto"),
                        help="protocol era (default: probe, then fall back)")
    parser.add_argument("--timeout", type=float, default=d(60.0),
                        help="seconds per request (default 60)")
    parser.add_argument("-H", "--header", action="append", default=d([]), metavar="'NAME: VALUE'",
                        help="extra HTTP header (repeatable)")
    parser.add_argument("-e", "--env", action="append", default=d([]), metavar="KEY=VALUE",
                        help="environment variable for a stdio server (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", default=d(False),
                        help="log the protocol exchange to stderr")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, summary in (("list", "list a server's tools, prompts and resources"),
                          ("call", "call a tool and print its result")):
        p = sub.add_parser(name, help=summary, description=summary, usage=_USAGE[name])
        _options(p)
        if name == "call":
            p.add_argument("--args", metavar="JSON", help="all arguments as one JSON object")
        p.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(func=run_list if name == "list" else run_call, command_name=name)


def _split(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """Positional words before ``--`` (options there are honoured too) and the command."""
    argv: list[str] = list(args.argv)
    command = None
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:]
        if not command:
            raise UsageError("nothing after --: give the server command")
    again = argparse.ArgumentParser(add_help=False, prog=f"mcpkit {args.command_name}")
    _options(again, default=argparse.SUPPRESS)
    again.add_argument("--args", default=argparse.SUPPRESS)
    again.add_argument("words", nargs="*")
    try:
        late = again.parse_intermixed_args(argv)
    except SystemExit:
        raise UsageError("bad options") from None
    words = late.words
    del late.words
    vars(args).update(vars(late))
    return words, command


def _client(target: str | list[str], args: argparse.Namespace) -> Client:
    from ..client import Client

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
    interactive = sys.stdin.isatty() and not args.json
    return Client(target, era=args.era, timeout=args.timeout, headers=headers,
                  env=env or None, elicitation=_ask_user if interactive else None)


def _run(coro_fn: Any, args: argparse.Namespace) -> int:
    from ..client import ClientError

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        return int(anyio.run(coro_fn, args))
    except UsageError as exc:
        print(f"mcpkit {args.command_name}: {exc}\nusage: {_USAGE[args.command_name]}",
              file=sys.stderr)
        return 2
    except ClientError as exc:
        print(f"mcpkit {args.command_name}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


# ---------------------------------------------------------------------- list


def run_list(args: argparse.Namespace) -> int:
    return _run(_list, args)


async def _list(args: argparse.Namespace) -> int:
    words, command = _split(args)
    if command is not None and words:
        raise UsageError(f"unexpected {words[0]!r} before --")
    if command is None and len(words) != 1:
        raise UsageError("give exactly one TARGET (a URL or a quoted command line)")
    async with _client(command or words[0], args) as client:
        info = client.server_info
        listing: dict[str, Any] = {"tools": [], "prompts": [], "resources": [],
                                   "resourceTemplates": []}
        if info.supports("tools"):
            listing["tools"] = await client.list_tools()
        if info.supports("prompts"):
            listing["prompts"] = await client.list_prompts()
        if info.supports("resources"):
            listing["resources"] = await client.list_resources()
            listing["resourceTemplates"] = await _optional(client.list_resource_templates())
        server = {"name": info.implementation.get("name"),
                  "version": info.implementation.get("version"),
                  "protocolVersion": info.protocol_version, "era": info.era,
                  "capabilities": info.capabilities, "instructions": info.instructions}
        if args.json:
            print(json.dumps({"server": server, **listing,
                              "droppedTools": client.dropped_tools}, indent=2))
            return 0
        _print_listing(server, listing, client.dropped_tools)
    return 0


async def _optional(awaitable: Any) -> list[Any]:
    from ..client import ServerError

    try:
        return list(await awaitable)
    except ServerError as exc:  # e.g. a server without templates answering -32601
        logging.getLogger("mcpkit.cli").debug("skipped: %s", exc)
        return []


def _print_listing(server: dict[str, Any], listing: dict[str, Any],
                   dropped: dict[str, str]) -> None:
    name = server["name"] or "(unnamed server)"
    print(f"{name} {server['version'] or ''}".rstrip()
          + f"  [protocol {server['protocolVersion']}, {server['era']} era]")
    if server["instructions"]:
        print(f"  {_first_line(server['instructions'])}")
    print(f"\nTools ({len(listing['tools'])}):")
    for tool in listing["tools"]:
        print(f"  {tool['name']}({_signature(tool.get('inputSchema') or {})})")
        if tool.get("description"):
            print(f"      {_first_line(tool['description'])}")
    for tool_name, why in dropped.items():
        print(f"  (dropped {tool_name}: {why})")
    print(f"\nPrompts ({len(listing['prompts'])}):")
    for prompt in listing["prompts"]:
        arguments = ", ".join(a["name"] + ("" if a.get("required") else "?")
                              for a in prompt.get("arguments") or [])
        print(f"  {prompt['name']}({arguments})" + _desc(prompt))
    print(f"\nResources ({len(listing['resources'])}):")
    for res in listing["resources"]:
        mime = f" [{res['mimeType']}]" if res.get("mimeType") else ""
        print(f"  {res['uri']}{mime}" + _desc(res))
    if listing["resourceTemplates"]:
        print(f"\nResource templates ({len(listing['resourceTemplates'])}):")
        for tpl in listing["resourceTemplates"]:
            print(f"  {tpl['uriTemplate']}" + _desc(tpl))


def _signature(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for key, prop in props.items():
        kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
        parts.append(f"{key}{'' if key in required else '?'}: {kind}")
    return ", ".join(parts)


def _desc(item: dict[str, Any]) -> str:
    text = item.get("description") or item.get("title") or ""
    return f"  - {_first_line(text)}" if text else ""


def _first_line(text: str) -> str:
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if len(line) <= 100 else line[:99] + "…"


# ---------------------------------------------------------------------- call


def run_call(args: argparse.Namespace) -> int:
    return _run(_call, args)


async def _call(args: argparse.Namespace) -> int:
    words, command = _split(args)
    if command is None:
        if len(words) < 2:
            raise UsageError("give TARGET and TOOL")
        target: str | list[str] = words[0]
        tool_name, pairs = words[1], words[2:]
    else:
        if not words:
            raise UsageError("give TOOL before --")
        target, tool_name, pairs = command, words[0], words[1:]
    arguments: dict[str, Any] = {}
    if args.args:
        try:
            loaded = json.loads(args.args)
        except ValueError as exc:
            raise UsageError(f"--args is not JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise UsageError("--args must be a JSON object")
        arguments.update(loaded)
    async with _client(target, args) as client:
        tools: dict[str, dict[str, Any]] = {t["name"]: dict(t) for t in await client.list_tools()}
        if tool_name not in tools and tool_name not in client.dropped_tools:
            known = ", ".join(sorted(tools)) or "(none)"
            raise UsageError(f"the server has no tool {tool_name!r}; it has: {known}")
        schema = tools.get(tool_name, {}).get("inputSchema") or {}
        arguments.update(parse_pairs(pairs, schema))
        result = await client.call_tool(tool_name, arguments)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_result(dict(result), sys.stderr if result.get("isError") else sys.stdout)
    return 1 if result.get("isError") else 0


def parse_pairs(pairs: list[str], schema: dict[str, Any]) -> dict[str, Any]:
    """``key=value`` (converted by the schema's type) and ``key:=JSON`` words."""
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for pair in pairs:
        if ":=" in pair and pair.index(":=") < pair.find("=") + 1:
            key, _, raw = pair.partition(":=")
            try:
                out[key] = json.loads(raw)
            except ValueError as exc:
                raise UsageError(f"{key}:= is not JSON: {exc}") from None
            continue
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {pair!r}")
        prop = props.get(key)
        out[key] = _convert(key, text, prop.get("type") if isinstance(prop, dict) else None)
    return out


def _convert(key: str, text: str, kind: Any) -> Any:
    if kind == "string":
        return text
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise UsageError(f"{key}: expected true or false, got {text!r}")
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text) if "." in text or "e" in \
                text.lower() else int(text)
        except ValueError:
            raise UsageError(f"{key}: expected a {kind}, got {text!r}") from None
    if kind in ("array", "object") or kind is None:
        try:
            return json.loads(text)
        except ValueError:
            if kind is None:
                return text
            raise UsageError(f"{key}: expected JSON for a{'n' * (kind == 'array')} {kind}, "
                             f"got {text!r}") from None
    return text


def print_result(result: dict[str, Any], out: Any) -> None:
    blocks = result.get("content") or []
    texts = 0
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            texts += 1
            print(block.get("text", ""), file=out)
        elif kind in ("image", "audio"):
            size = len(block.get("data", "")) * 3 // 4
            print(f"[{kind} {block.get('mimeType', '?')}, ~{size} bytes]", file=out)
        elif kind == "resource":
            res = block.get("resource") or {}
            print(f"[resource {res.get('uri')}]", file=out)
            if "text" in res:
                print(res["text"], file=out)
        elif kind == "resource_link":
            print(f"[link {block.get('uri')}]", file=out)
        else:
            print(json.dumps(block), file=out)
    if "structuredContent" in result and not texts:
        print(json.dumps(result["structuredContent"], indent=2), file=out)


# ---------------------------------------------------------------------- elicitation


async def _ask_user(params: dict[str, Any]) -> ElicitResult:
    """Form elicitation on a terminal: one prompt per field, defaults in brackets."""
    print(f"\nThe server asks: {params.get('message', '')}", file=sys.stderr)
    schema = params.get("requestedSchema") or {}
    content: dict[str, Any] = {}
    try:
        for key, prop in (schema.get("properties") or {}).items():
            kind = prop.get("type") if isinstance(prop, dict) else None
            default = prop.get("default") if isinstance(prop, dict) else None
            hint = f" [{default}]" if default is not None else ""
            text = await anyio.to_thread.run_sync(input, f"  {key} ({kind}){hint}: ")
            if text == "" and default is not None:
                content[key] = default
            elif text != "":
                content[key] = _convert(key, text, kind)
    except (EOFError, UsageError):
        return {"action": "decline"}
    return {"action": "accept", "content": content}
