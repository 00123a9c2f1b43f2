"""``mcpkit publish TARGET --dry-run``: the MCP Registry's ``server.json``, generated from
the server and validated against the registry's published schema (vendored in
``registry/server.schema.json``, with its source and license in ``registry/README.md``).

The entry says where the server can be had: a PyPI package (``--package pypi:NAME@VERSION``),
a bundle built by ``mcpkit pack`` at a download URL (``--bundle FILE --bundle-url URL``:
its SHA-256 goes in), a hosted endpoint (``--remote URL``), or several.  The server's
declared settings (:meth:`Server.setting`) become each package's
``environmentVariables``.  Uploading is the registry's own ``mcp-publisher``'s job (it
holds the login); this command writes the file it publishes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..server.server import Server
from .command import Command, add_list_option
from .exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .target import TargetError, load_server

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"
#: The registry's limit on ``description``.
MAX_DESCRIPTION = 100


class PublishError(Exception):
    """The command line cannot make a valid entry; the message says why."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="TARGET", help="the server: demo.py[:name] or pkg.mod:name")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="write and validate server.json without uploading (the only mode: uploading "
        "is mcp-publisher's)",
    )
    p.add_argument(
        "--name",
        required=True,
        help="the registry name, reverse-DNS with one slash: io.github.USER/SERVER",
    )
    add_list_option(
        p,
        "--package",
        metavar="pypi:NAME@VERSION",
        help="a PyPI package that serves it over stdio (repeatable)",
    )
    p.add_argument("--bundle", metavar="FILE", help="a .mcpb from `mcpkit pack` (its SHA-256)")
    p.add_argument("--bundle-url", metavar="URL", help="where --bundle can be downloaded")
    add_list_option(p, "--remote", metavar="URL", help="a Streamable HTTP endpoint (repeatable)")
    p.add_argument("--repository", metavar="URL", help="the source repository (GitHub, GitLab)")
    p.add_argument("-o", "--output", metavar="DIR", default=".", help="where server.json goes")


def run(args: argparse.Namespace) -> int:
    if not args.dry_run:
        print(
            "mcpkit publish: only --dry-run is supported: it writes server.json; upload it "
            "with the registry's `mcp-publisher publish`",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        server = load_server(args.target)
        entry = server_json(server, args)
    except (TargetError, PublishError) as exc:
        print(f"mcpkit publish: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problems = validate(entry)
    if problems:
        print("mcpkit publish: the entry does not fit the registry's schema:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_FAILURE
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "server.json"
    path.write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    where = len(entry.get("packages", [])) + len(entry.get("remotes", []))
    print(
        f"mcpkit publish: wrote {path} ({entry['name']} {entry['version']}, {where} place(s) "
        "to get it); valid against the registry's schema. Publish it with: mcp-publisher publish",
        file=sys.stderr,
    )
    return EXIT_OK


def server_json(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    """The registry entry for ``server`` from the command line's places to get it."""
    entry: dict[str, Any] = {
        "$schema": SCHEMA_URL,
        "name": args.name,
        "description": _description(server),
        "version": server.version,
    }
    if server.info.get("websiteUrl"):
        entry["websiteUrl"] = server.info["websiteUrl"]
    if args.repository:
        entry["repository"] = {"url": args.repository, "source": _forge(args.repository)}
    packages = [_pypi(spec, server) for spec in args.package]
    if args.bundle or args.bundle_url:
        packages.append(_bundle(args.bundle, args.bundle_url, server))
    if packages:
        entry["packages"] = packages
    if args.remote:
        entry["remotes"] = [{"type": "streamable-http", "url": url} for url in args.remote]
    if not packages and not args.remote:
        raise PublishError("say where the server can be had: --package, --bundle or --remote")
    return entry


def validate(entry: dict[str, Any]) -> list[str]:
    """What in ``entry`` breaks the registry's schema (empty: nothing)."""
    import jsonschema

    schema = json.loads(
        files(__package__ or "mcpkit.cli").joinpath("registry/server.schema.json").read_text()
    )
    validator = jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(top)'}: {error.message}"
        for error in sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
    ]


def _description(server: Server) -> str:
    text = server.info.get("description") or server.instructions or f"The {server.name} server"
    line = str(text).strip().splitlines()[0]
    return line if len(line) <= MAX_DESCRIPTION else line[: MAX_DESCRIPTION - 1] + "…"


def _environment(server: Server) -> list[dict[str, Any]]:
    variables = []
    for setting in server.settings.values():
        variable: dict[str, Any] = {
            "name": setting.name,
            "description": setting.description,
            "isRequired": setting.required,
            "isSecret": setting.secret,
        }
        if setting.default is not None:
            variable["default"] = setting.default
        variables.append(variable)
    return variables


def _with_environment(package: dict[str, Any], server: Server) -> dict[str, Any]:
    variables = _environment(server)
    if variables:
        package["environmentVariables"] = variables
    return package


def _pypi(spec: str, server: Server) -> dict[str, Any]:
    match = re.fullmatch(r"pypi:([A-Za-z0-9][A-Za-z0-9._-]*)@(\S+)", spec)
    if match is None:
        raise PublishError(f"--package {spec!r}: expected pypi:NAME@VERSION")
    name, version = match.groups()
    package = {
        "registryType": "pypi",
        "registryBaseUrl": "https://pypi.org",
        "identifier": name,
        "version": version,
        "transport": {"type": "stdio"},
    }
    return _with_environment(package, server)


def _bundle(path: str | None, url: str | None, server: Server) -> dict[str, Any]:
    if not (path and url):
        raise PublishError("a bundle needs both --bundle FILE (for its SHA-256) and --bundle-url")
    if not Path(path).is_file():
        raise PublishError(f"--bundle {path}: no such file")
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    package = {
        "registryType": "mcpb",
        "identifier": url,
        "version": server.version,
        "fileSha256": digest,
        "transport": {"type": "stdio"},
    }
    return _with_environment(package, server)


def _forge(url: str) -> str:
    host = re.sub(r"^https?://", "", url).split("/")[0].lower()
    return host.removeprefix("www.").split(".")[0]


COMMAND = Command(
    "publish",
    help="write the MCP Registry's server.json for a server (--dry-run)",
    description="Write server.json for the MCP Registry from the server (name, version, "
    "description, settings as environment variables) and validate it against the "
    "registry's published schema.",
    examples=[
        "mcpkit publish demo.py --dry-run --name io.github.me/demo --package pypi:demo-mcp@1.0.0",
        "mcpkit publish demo.py --dry-run --name io.github.me/demo \\\n"
        "      --bundle dist/demo-1.0.0.mcpb --bundle-url https://example.com/demo-1.0.0.mcpb",
        "mcpkit publish demo.py --dry-run --name com.example/demo --remote https://example.com/mcp",
    ],
    notes="exit status: 0 written and valid, 1 the entry does not fit the schema, 2 bad usage.",
    arguments=add_arguments,
    run=run,
)
