"""Serve a server in the foreground, over stdio or Streamable HTTP: the one launcher.

``mcpkit serve``, ``mcpkit dev`` and ``Server.run()`` all end here, so ``python demo.py``
with ``server.run()`` at the bottom behaves exactly like ``mcpkit serve demo.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..runtime.contracts import ServedServer

Transport = Literal["stdio", "http"]
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(
    server: ServedServer,
    transport: Transport = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    legacy: bool = True,
    modern: bool = True,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    log_level: str = "warning",
    fds: tuple[int, int] | None = None,
    make_app: Callable[[ServedServer, Any], Any] | None = None,
    announce: bool = True,
    **uvicorn_options: Any,
) -> None:
    """Serve until stdin closes (stdio) or SIGINT/SIGTERM (HTTP).

    ``fds``: stdio pipes already taken off fds 0/1 (``mcpkit serve`` takes them before it
    imports the user's file, so a print at import time cannot corrupt the protocol).
    ``make_app(server, HttpOptions)`` wraps the HTTP app (e.g. an OAuth resource server).
    ``uvicorn_options``: more ``uvicorn.Config`` options (``log_config=None`` when the
    command line has set up logging itself, as ``--log-format json`` does).
    """
    if transport == "stdio":
        from .stdio import run_stdio

        run_stdio(server, fds=fds)
        return
    if transport != "http":
        raise ValueError(f"transport must be 'stdio' or 'http', not {transport!r}")
    from .http import HttpOptions, McpHttpApp
    from .http.security import HostPolicy
    from .http.server import serve_uvicorn

    options = HttpOptions(
        path=path,
        legacy=legacy,
        modern=modern,
        host_policy=HostPolicy.for_bind(host, allowed_hosts, allowed_origins),
    )
    app = make_app(server, options) if make_app is not None else McpHttpApp(server, options)
    if announce:
        print(
            "\n".join(banner(getattr(server, "name", "?"), host, port, path, legacy, modern)),
            file=sys.stderr,
            flush=True,
        )
    serve_uvicorn(app, host, port, log_level=log_level, **uvicorn_options)


def banner(
    name: str,
    host: str,
    port: int,
    path: str,
    legacy: bool = True,
    modern: bool = True,
    *,
    command: str = "mcpkit",
) -> tuple[str, str]:
    """The two lines announcing an HTTP server: where it serves, and a command to try
    (``command``: how the person reaches ``mcpkit`` from their shell)."""
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}{path}"
    eras = " and ".join(
        era for era, on in (("protocol 2026-07-28", modern), ("legacy 2025-11-25", legacy)) if on
    )
    return (
        f"mcpkit: serving {name!r} at {url} (Streamable HTTP; {eras})",
        f"  try:  {command} list {url}",
    )


__all__ = ["LOOPBACK", "Transport", "banner", "serve"]
