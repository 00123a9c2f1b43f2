"""Helpers for the auth tests: the local authorization server of examples/auth and the stack of
an issuer and a protected MCP server (apps are served with ``support.servers.serve_app``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "auth"))

from local_as import LocalAuthorizationServer  # noqa: E402

__all__ = ["LocalAuthorizationServer", "Stack"]


@dataclass
class Stack:
    issuer: str
    authz: LocalAuthorizationServer
    mcp_url: str
    app: Any
