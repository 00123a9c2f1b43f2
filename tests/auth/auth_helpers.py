"""Helpers for the auth tests: serve an ASGI app on uvicorn (127.0.0.1, a thread)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.servers import ThreadServer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "auth"))

from local_as import LocalAuthorizationServer  # noqa: E402

__all__ = ["LocalAuthorizationServer", "Stack", "serve"]


@contextmanager
def serve(make_app: Callable[[str], Any]) -> Iterator[tuple[str, Any]]:
    """Bind a free port, build the app for its base URL, serve it; yield (base, app)."""
    with ThreadServer(make_app=make_app, lifespan="auto") as running:
        yield running.base, running.app


@dataclass
class Stack:
    issuer: str
    authz: LocalAuthorizationServer
    mcp_url: str
    app: Any
