"""``mcpkit gateway connections CONFIG --principal P [--revoke UPSTREAM]``: a caller's
connected accounts at the gateway's ``per_user`` upstreams, read from (and revoked in)
the gateway's state backend with its keyring, as the running gateway keeps them."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--principal", help="with `connections`: the caller whose connections to list or revoke"
    )
    p.add_argument(
        "--revoke", metavar="UPSTREAM", help="with `connections`: revoke this connection"
    )


def run(config_path: str, principal: str | None, revoke: str | None) -> int:
    import anyio

    from ..gateway.config import ConfigError, load_config

    if not principal:
        print("mcpkit gateway connections: --principal is required", file=sys.stderr)
        return 2
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        print(f"mcpkit gateway connections: {exc}", file=sys.stderr)
        return 2
    names = [u.name for u in config.upstreams if u.oauth and u.oauth.kind == "per_user"]
    if revoke is not None and revoke not in names:
        known = ", ".join(names) or "none"
        print(
            f"mcpkit gateway connections: {revoke!r} is not a per_user upstream ({known})",
            file=sys.stderr,
        )
        return 2
    if config.state.startswith("memory"):
        print(
            "mcpkit gateway connections: the gateway keeps its state in memory; ask it "
            "(GET/DELETE /connect with the caller's token) instead",
            file=sys.stderr,
        )
        return 2
    return anyio.run(_run, config.state, principal, names, revoke)


async def _run(state: str, principal: str, names: list[str], revoke: str | None) -> int:
    from ..gateway.connect import Connections, Sealing
    from ..protocol.sealing import Keyring
    from ..server.keys import load_shared_keyring
    from ..state.base import open_backend

    backend = open_backend(state)
    try:
        keyring = Keyring.from_env() or await load_shared_keyring(backend)
        connections = Connections(Sealing(keyring, backend))
        if revoke is not None:
            if not await connections.delete(principal, revoke):
                print(f"{principal} has no connection to {revoke}", file=sys.stderr)
                return 1
            print(f"revoked {principal}'s connection to {revoke}")
            return 0
        found = await connections.of(principal, names)
        print(json.dumps([c.describe() for c in found], indent=2))
        return 0
    finally:
        await backend.aclose()
