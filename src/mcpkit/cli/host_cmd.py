"""``mcpkit host``: many MCP servers, a model and a person, in a terminal or a web page."""

from __future__ import annotations

import argparse
import sys

from .command import Command
from .observability import add_arguments as add_observability
from .observability import setup as setup_observability


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="JSON file in the common mcpServers shape")
    p.add_argument(
        "--web",
        action="store_true",
        help="serve a local web page on 127.0.0.1 (prints its URL with a token)",
    )
    p.add_argument("--port", type=int, default=0, help="port for --web (default: a free one)")
    p.add_argument(
        "--sandbox-port",
        type=int,
        default=0,
        help="port of the MCP App sandbox origin for --web (default: a free one; "
        "fix it to keep views' _meta.ui.domain origins stable)",
    )
    p.add_argument("--open", action="store_true", help="open the page in a browser")
    p.add_argument(
        "--model",
        help="provider:model, e.g. anthropic:claude-sonnet-4-5 or "
        "openai:gpt-4o-mini (API key from the environment)",
    )
    p.add_argument(
        "--reset-trust",
        action="store_true",
        help="forget every server command trusted so far, then exit",
    )
    p.add_argument("--log-level", default="warning")
    add_observability(p, metrics=False)


def run(args: argparse.Namespace) -> int:
    import contextlib
    import dataclasses

    import anyio

    from ..host.config import ConfigError, HostConfig, load_config, parse_config
    from ..host.models.base import ModelError, model_from_config
    from ..host.oauth import default_token_store
    from ..host.trust import TrustStore

    try:
        setup_observability(args, None, "mcpkit-host")  # --otel: the clients' spans
    except (ImportError, ValueError) as exc:
        print(f"mcpkit host: {exc}", file=sys.stderr)
        return 2
    trust = TrustStore()
    if args.reset_trust:
        count = trust.reset()
        print(f"mcpkit host: forgot {count} trusted server command(s) ({trust.path})")
        return 0
    try:
        config = load_config(args.config) if args.config else HostConfig()
        if args.model:
            model_config = parse_config({"model": args.model}).model
            config = dataclasses.replace(config, model=model_config)
        model = model_from_config(config.model) if config.model else None
    except (ConfigError, ModelError) as exc:
        print(f"mcpkit host: {exc}", file=sys.stderr)
        return 2
    if args.web:
        from ..types.extras import require

        require("starlette", "host", "mcpkit host --web")
        from ..host.web import run_web

        def ready(url: str) -> None:
            print(f"mcpkit host: open {url}", file=sys.stderr, flush=True)
            if args.open:
                import webbrowser

                webbrowser.open(url)

        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(
                lambda: run_web(
                    config,
                    port=args.port,
                    sandbox_port=args.sandbox_port,
                    model=model,
                    on_ready=ready,
                    trust=trust,
                    token_store=default_token_store(),
                )
            )
        return 0
    from ..host.terminal import run_terminal

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(
            lambda: run_terminal(
                config, model=model, trust=trust, token_store=default_token_store()
            )
        )
    return 0


COMMAND = Command(
    "host",
    help="connect MCP servers to a model, in a terminal or a web page",
    description="Run an MCP host: servers from an mcpServers JSON file, "
    "a permission policy, and a model loop.",
    examples=[
        "mcpkit host --config examples/host.json          # terminal",
        "mcpkit host --web --config examples/host.json    # local page",
        "mcpkit host --web --model anthropic:claude-sonnet-4-5",
        "mcpkit host --reset-trust    # forget trusted server commands",
    ],
    notes="A bare python, python3 or mcpkit command in the config runs "
    "with this host's own interpreter.",
    arguments=add_arguments,
    run=run,
)
