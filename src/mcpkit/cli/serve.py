"""``mcpkit serve``: run a server over stdio (default) or Streamable HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from functools import partial
from typing import Any

from ..server.lifespan import StateStartupError
from ..types.extras import require
from .command import Command, add_list_option, mcpkit_command
from .exits import EXIT_CONNECTION, EXIT_USAGE
from .observability import JsonFormatter, uvicorn_log_config, with_metrics
from .observability import add_arguments as add_observability
from .observability import setup as setup_observability
from .server_card import ServerCardFront, check_card_name, server_card
from .target import TargetError, UserCodeError, load_server


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", help="path/to/file.py[:name] or package.module[:name]")
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--path", default="/mcp", help="endpoint path (default /mcp)")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow binding a non-loopback address without authentication",
    )
    p.add_argument("--no-legacy", action="store_true", help="serve only protocol 2026-07-28")
    p.add_argument(
        "--no-modern", action="store_true", help="serve only the legacy (<= 2025-11-25) protocol"
    )
    add_list_option(p, "--allowed-host", help="extra Host to accept")
    add_list_option(p, "--allowed-origin", help="extra Origin to accept")
    p.add_argument(
        "--state",
        default=None,
        help="state backend URL: memory:, sqlite:///path.db, redis://host:port/0 (default: "
        "memory: over stdio; with --http SQLite in the per-user data directory, "
        "e.g. ~/.local/share/mcpkit/servers/NAME/state.db, private to you)",
    )
    p.add_argument("--log-level", default="warning")
    # -- task workers (cli/worker.py) --
    p.add_argument(
        "--task-workers",
        choices=["in-process", "external"],
        default="in-process",
        help="where task-backed tool calls run: in this process (default), or 'external': "
        "queued in Redis for `mcpkit worker` processes (needs --state redis://)",
    )
    p.add_argument(
        "--max-queued-tasks",
        type=int,
        default=1000,
        metavar="N",
        help="with --task-workers external: unfinished tasks one principal may have "
        "(0: no cap; default 1000)",
    )
    # -- end task workers --
    add_observability(p, metrics=True)
    auth = p.add_argument_group("OAuth resource server (HTTP; needs the 'auth' extra)")
    auth.add_argument("--auth-issuer", help="authorization server issuer whose JWTs to accept")
    auth.add_argument(
        "--auth-audience",
        help="this server's canonical URL, the tokens' audience (default: http://HOST:PORT/PATH)",
    )
    auth.add_argument("--auth-jwks", help="JWKS URL (default: from the issuer's metadata)")
    add_list_option(auth, "--auth-scope", help="scope every request needs (repeatable)")
    auth.add_argument(
        "--authorization-server",
        metavar="FILE",
        help="serve an OAuth authorization server beside the MCP endpoint, users signing in "
        "at the upstream provider the TOML FILE names (needs the 'authserver' extra)",
    )
    p.add_argument(
        "--server-card",
        metavar="NAME",
        help="serve an MCP Server Card (experimental extension) at PATH/server-card, "
        "named NAME (reverse DNS: com.example/weather)",
    )
    # --- OpenAPI import (mcpkit.compose) -----------------------------------------------
    api = p.add_argument_group("OpenAPI import (instead of TARGET)")
    api.add_argument(
        "--openapi",
        metavar="SPEC",
        help="serve the REST API an OpenAPI 3.0/3.1 document "
        "(file or http(s) URL) describes, one tool per operation",
    )
    api.add_argument("--base-url", help="where the API is (default: the document's servers[0])")
    add_list_option(
        api,
        "--api-header",
        metavar="NAME:VALUE",
        help="header sent to the API with every request, e.g. an API key (repeatable)",
    )
    # --- end OpenAPI import --------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    if args.state and args.state.startswith(("redis://", "rediss://", "unix://")):
        require("redis", "redis", "the Redis state backend (--state redis://)")
    if args.auth_issuer:
        require("joserfc", "auth", "--auth-issuer (OAuth resource server)")
    claimed: tuple[int, int] | None = None
    if not args.http:
        # Take the protocol pipes before the target is imported: a print() at import time
        # must land on stderr, not in the protocol stream.
        from ..transports.stdio import claim_stdio

        claimed = claim_stdio()
    try:
        if args.openapi:
            server = _openapi_server(args)
        elif args.target:
            server = load_server(args.target)
        else:
            raise TargetError("give a TARGET (a server file or module) or --openapi SPEC")
    except TargetError as exc:
        print(f"mcpkit serve: {exc}", file=sys.stderr)
        return EXIT_CONNECTION if isinstance(exc, UserCodeError) else EXIT_USAGE
    if args.state:
        server.state = args.state
    try:
        server.open_state("stdio" if claimed is not None else "http")
    except StateStartupError as exc:
        print(f"mcpkit serve: {exc}", file=sys.stderr)
        return 2
    # -- task workers --
    if args.task_workers == "external":
        if not (args.state or "").startswith(("redis://", "rediss://", "unix://")):
            print(
                "mcpkit serve: --task-workers external needs --state redis://... "
                "(the task queue is a Redis stream)",
                file=sys.stderr,
            )
            return 2
        server.task_workers = "external"
    server.max_queued_tasks = args.max_queued_tasks
    # -- end task workers --
    if args.no_modern:
        server.modern_versions = ()
    try:
        setup_observability(args, server, server.info.get("name") or "mcpkit")
    except (ImportError, ValueError) as exc:
        print(f"mcpkit serve: {exc}", file=sys.stderr)
        return 2
    from ..transports.launch import LOOPBACK, serve

    if claimed is not None:
        serve(server, "stdio", fds=claimed)
        return 0
    loopback = args.host in LOOPBACK
    authenticated = bool(args.auth_issuer or args.authorization_server)
    if not loopback and not args.allow_remote and not authenticated:
        print(
            f"mcpkit serve: refusing to bind {args.host} without authentication; "
            "pass --allow-remote if a proxy in front of it authenticates",
            file=sys.stderr,
        )
        return 2
    make_app: Any = None
    if args.authorization_server:
        make_app = _with_authorization_server(args)
        if make_app is None:
            return 2
    elif args.auth_issuer:
        from ..auth import BearerAuth, JwtVerifier
        from ..transports.http.app import McpHttpApp

        if not loopback and not args.auth_audience:
            print(
                "mcpkit serve: --auth-audience (this server's public URL) is required "
                f"when binding {args.host}",
                file=sys.stderr,
            )
            return 2
        shown = f"[{args.host}]" if ":" in args.host else args.host
        resource = args.auth_audience or f"http://{shown}:{args.port}{args.path}"
        try:
            verifier = JwtVerifier(
                issuer=args.auth_issuer, audience=resource, jwks_uri=args.auth_jwks
            )
            auth = BearerAuth(
                verifier,
                resource=resource,
                authorization_servers=[args.auth_issuer],
                required_scopes=args.auth_scope,
            )
        except (ValueError, ImportError) as exc:
            print(f"mcpkit serve: {exc}", file=sys.stderr)
            return 2
        make_app = partial(McpHttpApp, auth=auth)
    if args.metrics:
        make_app = with_metrics(make_app)
    if args.server_card:
        wrong = check_card_name(args.server_card)
        if wrong:
            print(f"mcpkit serve: {wrong}", file=sys.stderr)
            return EXIT_USAGE
        make_app = _with_card(make_app, server, args)
    busy = _cannot_listen(args.host, args.port)
    if busy:
        print(f"mcpkit serve: {busy}", file=sys.stderr)
        return EXIT_CONNECTION
    _announce(args, server.name)
    serve(
        server,
        "http",
        host=args.host,
        port=args.port,
        path=args.path,
        legacy=not args.no_legacy,
        modern=not args.no_modern,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        log_level=args.log_level,
        make_app=make_app,
        announce=False,
        **uvicorn_log_config(args),
    )
    return 0


def _with_card(make_app: Any, server: Any, args: argparse.Namespace) -> Any:
    """``make_app`` (None: the plain MCP app) behind the Server Card's front."""
    from ..transports.http import McpHttpApp

    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = args.auth_audience or f"http://{shown}:{args.port}{args.path}"
    versions = [
        *(server.modern_versions if not args.no_modern else ()),
        *(server.legacy_versions if not args.no_legacy else ()),
    ]
    card = server_card(server, args.server_card, url, versions)

    def make(served: Any, options: Any) -> Any:
        inner = make_app(served, options) if make_app is not None else McpHttpApp(served, options)
        return ServerCardFront(inner, args.path, card)

    return make


def _cannot_listen(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (taken, or not an address of this machine),
    or None.  Checked before the banner, so that a busy port is never announced as served;
    the socket is closed again at once and uvicorn binds its own."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.create_server((host, port), family=family):
            return None
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        return f"cannot listen on {host}:{port}: {why} (another server there? try --port)"


def _announce(args: argparse.Namespace, name: str) -> None:
    """Where the server is and a command to try, on stderr: two lines of text, or one JSON
    log record (``message``, ``url``, ``try``) with ``--log-format json``."""
    from ..transports.launch import banner

    legacy, modern = not args.no_legacy, not args.no_modern
    where, hint = banner(
        name, args.host, args.port, args.path, legacy, modern, command=mcpkit_command()
    )
    if args.log_format != "json":
        print(f"{where}\n{hint}", file=sys.stderr, flush=True)
        return
    record = logging.makeLogRecord(
        {"name": "mcpkit.serve", "levelno": logging.INFO, "levelname": "INFO", "msg": where}
    )
    record.url = where.split(" at ", 1)[1].split(" ", 1)[0]
    record.__dict__["try"] = hint.split("try:", 1)[1].strip()
    print(JsonFormatter().format(record), file=sys.stderr, flush=True)


# --- OpenAPI import (mcpkit.compose) --------------------------------------------------
def _openapi_server(args: argparse.Namespace) -> Any:
    """The server for ``--openapi SPEC`` (a file, or a URL fetched once at startup)."""
    import httpx

    from ..compose.openapi import from_openapi, operator_spec_policy

    headers: dict[str, str] = {}
    for item in args.api_header:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise TargetError(f"--api-header takes NAME:VALUE, not {item!r}")
        headers[name.strip()] = value.strip()
    spec: Any = args.openapi
    # The address the operator typed is theirs to choose (an API on this machine);
    # redirects from it are checked against that choice.
    policy = operator_spec_policy(spec) if spec.startswith(("http://", "https://")) else None
    try:
        return from_openapi(spec, base_url=args.base_url, headers=headers, spec_policy=policy)
    except (OSError, ValueError, httpx.HTTPError) as exc:
        raise TargetError(f"cannot serve the OpenAPI document {args.openapi}: {exc}") from None


# --- end OpenAPI import ------------------------------------------------------------------


COMMAND = Command(
    "serve",
    help="serve an MCP server over stdio or HTTP",
    description="Serve a server file or module over stdio (what desktop hosts launch) "
    "or Streamable HTTP.",
    examples=[
        "mcpkit serve demo.py",
        "mcpkit serve demo.py:server --http --port 8000",
        "mcpkit serve pkg.module:app --http --state redis://127.0.0.1:6379/0",
    ],
    notes="TARGET without :NAME serves the module's `server`, `mcp` or `app` variable (or "
    "its only Server).",
    arguments=add_arguments,
    run=run,
)


def _with_authorization_server(args: argparse.Namespace) -> Any:
    """``McpHttpApp`` with the authorization server of ``--authorization-server FILE``
    (None, after saying why, when the file is wrong)."""
    require("joserfc", "authserver", "--authorization-server")
    from ..auth.server.config import load_authorization_server
    from ..transports.http.app import McpHttpApp
    from ..types.errors import ConfigError

    try:
        authz = load_authorization_server(args.authorization_server, mcp_path=args.path)
    except ConfigError as exc:
        print(f"mcpkit serve: {exc}", file=sys.stderr)
        return None
    return partial(McpHttpApp, auth=authz)
