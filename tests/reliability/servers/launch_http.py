"""Run the reliability fixture server over HTTP with options the CLI does not expose.

``python launch_http.py PORT [--max-sessions N] [--idle S] [--max-body B] [--auth]
[--no-legacy] [--body-timeout S]``.  ``--auth`` installs a toy authenticator (the
principal is the bearer token; no token -> 401) so tests can act as two different users.
The extra tool ``session_count`` reports how many legacy sessions the app holds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rel_server import server

from mcpkit.transports.http import HttpOptions, McpHttpApp
from mcpkit.transports.http.asgi import Rejection
from mcpkit.transports.http.server import serve_uvicorn
from mcpkit.types.errors import INVALID_REQUEST, McpError

APP: McpHttpApp | None = None


@server.tool
def session_count() -> int:
    """Legacy sessions held by this app right now."""
    assert APP is not None
    return len(APP.sessions)


async def bearer(scope: Any, headers: dict[str, str]) -> str:
    value = headers.get("authorization", "")
    if not value.lower().startswith("bearer ") or not value[7:].strip():
        raise Rejection(
            401,
            McpError(INVALID_REQUEST, "Unauthorized"),
            [(b"www-authenticate", b'Bearer realm="rel"')],
        )
    return value[7:].strip()


def main() -> None:
    global APP
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--max-sessions", type=int, default=10_000)
    p.add_argument("--idle", type=float, default=1800.0)
    p.add_argument("--max-body", type=int, default=4 * 1024 * 1024)
    p.add_argument("--body-timeout", type=float, default=30.0)
    p.add_argument("--auth", action="store_true")
    p.add_argument("--no-legacy", action="store_true")
    args = p.parse_args()
    server.state = "memory:"
    options = HttpOptions(
        max_sessions=args.max_sessions,
        session_idle_s=args.idle,
        max_body_bytes=args.max_body,
        body_timeout_s=args.body_timeout,
        legacy=not args.no_legacy,
    )
    APP = McpHttpApp(server, options, authenticate=bearer if args.auth else None)
    serve_uvicorn(APP, "127.0.0.1", args.port)


if __name__ == "__main__":
    main()
