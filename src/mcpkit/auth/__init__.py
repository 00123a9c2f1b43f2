"""Authorization for MCP over HTTP (OAuth 2.1).

Server side (resource server): :class:`BearerAuth` + :class:`ProtectedResource`, with
:class:`JwtVerifier` or :class:`IntrospectionVerifier`; handlers see ``ctx.principal``
(a :class:`Principal`).  Client side: :mod:`mcpkit.auth.client`.

Names are imported lazily so that ``import mcpkit.auth`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..types.lazy import lazy_exports

if TYPE_CHECKING:
    from .principal import Principal
    from .resource_server import AuthFailure, BearerAuth, ProtectedResource
    from .verifiers import IntrospectionVerifier, InvalidToken, JwtVerifier, TokenVerifier

__all__ = [
    "AuthFailure",
    "BearerAuth",
    "IntrospectionVerifier",
    "InvalidToken",
    "JwtVerifier",
    "Principal",
    "ProtectedResource",
    "TokenVerifier",
]

_WHERE = {
    "Principal": ".principal",
    "AuthFailure": ".resource_server",
    "BearerAuth": ".resource_server",
    "ProtectedResource": ".resource_server",
    "IntrospectionVerifier": ".verifiers",
    "InvalidToken": ".verifiers",
    "JwtVerifier": ".verifiers",
    "TokenVerifier": ".verifiers",
}


__getattr__ = lazy_exports(__name__, _WHERE)
