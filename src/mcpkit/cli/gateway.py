"""``mcpkit gateway CONFIG``: serve a gateway over Streamable HTTP (or stdio)."""

from __future__ import annotations

import argparse
import sys

from . import gateway_connections
from .command import Command, add_list_option
from .observability import add_arguments as add_observability
from .observability import setup as setup_observability
from .observability import uvicorn_log_config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "config",
        help="gateway TOML file (see examples/gateway.toml), or `connections` and the file",
    )
    p.add_argument("connections_config", nargs="?", help=argparse.SUPPRESS)
    gateway_connections.add_arguments(p)
    p.add_argument(
        "--check",
        action="store_true",
        help="check the config and exit: prints 'ok' (exit 0) or every mistake (exit 1)",
    )
    p.add_argument("--stdio", action="store_true", help="serve the front over stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow binding a non-loopback address (the config should enable auth)",
    )
    add_list_option(
        p,
        "--allowed-host",
        help="extra Host header to accept, e.g. the DNS name behind a load balancer",
    )
    add_list_option(
        p,
        "--allowed-origin",
        help="extra browser Origin to accept (see [gateway] cors_origins for CORS headers)",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="reload the config when the file changes (SIGHUP always reloads it)",
    )
    p.add_argument("--log-level", default="warning")
    add_observability(p, metrics=False)  # (the gateway always serves /metrics)


def run(args: argparse.Namespace) -> int:
    if args.config == "connections" and args.connections_config:
        return gateway_connections.run(args.connections_config, args.principal, args.revoke)
    from ..types.extras import EXTRAS, require

    for module in EXTRAS["gateway"]:  # say so before serving, not at the first limited call
        require(module, "gateway", "mcpkit gateway")
    from ..gateway.config import ConfigError, load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        for line in str(exc).splitlines():
            print(f"mcpkit gateway: {line}", file=sys.stderr)
        return 1 if args.check else 2
    if args.check:
        print("ok")
        return 0
    if args.stdio:
        import anyio

        from ..gateway.server import GatewayServer
        from ..transports.stdio import StdioServer, claim_stdio

        async def main() -> None:
            in_fd, out_fd = claim_stdio()
            gateway = GatewayServer(config)
            setup_observability(args, gateway, config.name)
            async with gateway.serving():
                await StdioServer(gateway).serve(in_fd, out_fd)

        anyio.run(main)
        return 0
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    if not loopback and not args.allow_remote:
        print(
            f"mcpkit gateway: refusing to bind {args.host} without --allow-remote", file=sys.stderr
        )
        return 2
    from ..gateway.app import GatewayApp
    from ..transports.http import HttpOptions
    from ..transports.http.security import HostPolicy
    from ..transports.http.server import serve_uvicorn

    policy = HostPolicy.for_bind(args.host, args.allowed_host, args.allowed_origin)
    try:
        app = GatewayApp(
            config, HttpOptions(host_policy=policy), config_path=args.config, watch=args.watch
        )
    except ValueError as exc:  # e.g. a [[server]] on the main endpoint's path
        print(f"mcpkit gateway: {exc}", file=sys.stderr)
        return 2
    try:
        setup_observability(args, app.server, config.name)
    except (ImportError, ValueError) as exc:
        print(f"mcpkit gateway: {exc}", file=sys.stderr)
        return 2
    print(
        f"mcpkit gateway: {len(config.upstreams)} upstream(s) at "
        f"http://{args.host}:{args.port}/mcp (metrics at /metrics, probes at /livez and /readyz)",
        file=sys.stderr,
        flush=True,
    )
    serve_uvicorn(app, args.host, args.port, log_level=args.log_level, **uvicorn_log_config(args))
    return 0


COMMAND = Command(
    "gateway",
    help="front many MCP servers with one policy-enforcing endpoint",
    description="Serve one MCP endpoint in front of the upstreams of a TOML file, with "
    "authentication, rules, rate limits and audit (needs the 'gateway' extra).",
    examples=[
        "mcpkit gateway examples/gateway.toml --port 8080   # /mcp, /metrics, /livez, /readyz",
        "mcpkit gateway gateway.toml --watch               # reload when the file changes",
        "mcpkit gateway gateway.toml --stdio               # the same front over stdio",
        "mcpkit gateway --check gateway.toml               # 'ok', or every mistake (exit 1)",
        "kill -HUP <pid>                                   # reload the config",
        "mcpkit gateway connections gateway.toml --principal alice [--revoke github]",
    ],
    arguments=add_arguments,
    run=run,
)
