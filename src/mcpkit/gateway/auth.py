"""Who is calling: static bearer tokens, or OAuth 2.1 access tokens through ``mcpkit.auth``.

In ``jwt`` mode the gateway is an OAuth 2.1 protected resource exactly like a server behind
:class:`mcpkit.auth.BearerAuth` (one implementation, not a second JWT stack): tokens are
checked by :class:`mcpkit.auth.JwtVerifier` (issuer, audience = the gateway's canonical URL,
expiry, algorithm allow-list), or by :class:`mcpkit.auth.IntrospectionVerifier` (RFC 7662)
when ``introspection_endpoint`` is set (opaque tokens).  The 401 carries
``resource_metadata`` and ``scope`` so a standard MCP client can discover where to log in,
and a call that needs more scopes gets a 403 ``insufficient_scope`` challenge (step-up).
The RFC 9728 metadata itself is served by :class:`mcpkit.auth.ProtectedResource` (see
:mod:`mcpkit.gateway.app`).

In ``authorization_server`` mode the gateway is also the authorization server its clients
sign in with (:mod:`mcpkit.auth.server`, users signing in at the ``[auth.upstream]``
identity provider; its endpoints are routed by :mod:`mcpkit.gateway.app`), and accepts
only that server's tokens, through the same resource-server policy.  The token's claims
(``sub``, ``email``, ``groups``) are the caller's, as in ``jwt`` mode.

``bearer`` mode (static tokens compared in constant time) has no authorization server and
so no metadata; its 401 says ``realm="mcp"``.

Either way the result is a gateway :class:`~mcpkit.gateway.policy.Caller`, and a refusal
is raised before the body is read as a :class:`Rejection` carrying the HTTP status, the
``WWW-Authenticate`` header and a JSON-RPC error body the client can show.  The token is
used here only; it is never forwarded to an upstream.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..auth.challenge import format_challenge
from ..auth.principal import Principal
from ..auth.resource_server import AuthFailure, BearerAuth
from ..auth.verifiers import IntrospectionVerifier, JwtVerifier, TokenVerifier
from ..transports.http.asgi import Rejection, Scope
from ..types.codec import decode
from ..types.errors import McpError
from ..types.extras import require
from .config import MCP_PATH, AuthConfig
from .policy import ANONYMOUS, Caller

if TYPE_CHECKING:
    from ..auth.server import AuthorizationServer

UNAUTHENTICATED = -31001
INSUFFICIENT_SCOPE = -31003


def _bearer_challenge(error: str, description: str) -> Rejection:
    header = format_challenge(
        "Bearer", {"realm": "mcp", "error": error, "error_description": description}
    )
    return Rejection(
        401,
        McpError(UNAUTHENTICATED, f"Unauthorized: {description}"),
        [(b"www-authenticate", header.encode())],
    )


def build_authorization_server(config: AuthConfig) -> AuthorizationServer | None:
    """The gateway's own authorization server (``authorization_server`` mode; else None)."""
    if config.mode != "authorization_server":
        return None
    assert config.authorization_server is not None  # parse_config checked and kept it
    require("joserfc", "authserver", 'auth.mode = "authorization_server"')
    from ..auth.server.config import build_authorization_server as build

    return build(config.authorization_server, mcp_path=MCP_PATH, where="auth")


def build_bearer_auth(
    config: AuthConfig, base_dir: Path, authz: AuthorizationServer | None = None
) -> BearerAuth | None:
    """The ``mcpkit.auth`` resource-server policy for ``jwt`` mode, or for the tokens of
    ``authz`` (None in the other modes)."""
    if authz is not None:
        return authz.resource_server(tool_scopes=config.tool_scopes, resource_name="mcpkit gateway")
    if config.mode != "jwt":
        return None
    assert config.issuer is not None and config.audience is not None  # parse_config checked
    verifier: TokenVerifier
    if config.introspection_endpoint:  # opaque tokens: ask the authorization server
        verifier = IntrospectionVerifier(
            config.introspection_endpoint,
            audience=config.audience,
            issuer=config.issuer,
            client_id=config.introspection_client_id,
            client_secret=config.introspection_client_secret,
        )
    else:
        jwks: dict[str, Any] | None = None
        if config.jwks_file:
            path = Path(config.jwks_file)
            data = decode((path if path.is_absolute() else base_dir / path).read_bytes())
            jwks = data if isinstance(data, dict) else None
        verifier = JwtVerifier(
            issuer=config.issuer,
            audience=config.audience,
            jwks_uri=config.jwks_url,  # None: discovered from the issuer's metadata
            jwks=jwks,
        )
    resource = config.resource or config.audience
    return BearerAuth(
        verifier,
        resource=resource,
        authorization_servers=list(config.authorization_servers or (config.issuer,)),
        required_scopes=config.scopes,
        tool_scopes=config.tool_scopes,
        resource_name="mcpkit gateway",
    )


class GatewayAuthenticator:
    def __init__(self, config: AuthConfig, base_dir: Path | None = None) -> None:
        self.config = config
        self.base_dir = base_dir or Path.cwd()
        #: The authorization server served beside the MCP path (its mode only).
        self.authorization_server = build_authorization_server(config)
        self.bearer = build_bearer_auth(config, self.base_dir, self.authorization_server)

    def keep_authorization_server(self, previous: GatewayAuthenticator) -> None:
        """On a reload: go on with ``previous``'s authorization server (its state, keys and
        signed-in users) when both configs describe the same one."""
        kept = previous.authorization_server
        if (
            kept is None
            or self.authorization_server is None
            or previous.config.authorization_server != self.config.authorization_server
        ):
            return
        self.authorization_server = kept
        self.bearer = build_bearer_auth(self.config, self.base_dir, kept)

    @property
    def has_call_scopes(self) -> bool:
        """Whether a request's body must be read to know the scopes it needs."""
        return self.bearer is not None and self.bearer.has_call_scopes

    async def __call__(self, scope: Scope, headers: dict[str, str]) -> Caller:
        if self.config.mode == "none":
            return ANONYMOUS
        if self.bearer is not None:
            try:
                token = await self.bearer.authenticate(scope.get("headers", ()))
            except AuthFailure as failure:
                raise self.refusal(failure) from None
            raw = headers.get("authorization", "").partition(" ")[2].strip() or None
            return self._principal(token, raw)
        value = headers.get("authorization", "")
        scheme, _, token_text = value.partition(" ")
        if scheme.lower() != "bearer" or not token_text.strip():
            raise _bearer_challenge("invalid_request", "a Bearer token is required")
        token_bytes = token_text.strip().encode()
        for known, who in self.config.tokens.items():
            if hmac.compare_digest(known.encode(), token_bytes):
                return Caller(who["principal"], tuple(who.get("groups", ())))
        raise _bearer_challenge("invalid_token", "unknown token")

    def check_call(self, principal: Caller, message: object) -> None:
        """403 ``insufficient_scope`` when the body calls a tool that needs more scopes."""
        if self.bearer is None:
            return
        needed = self.bearer.scopes_for_call(message)
        if needed and not needed_met(principal, needed):
            missing = " ".join(s for s in needed if s not in principal.scopes)
            wanted = list(dict.fromkeys([*self.bearer.required_scopes, *needed]))
            raise self.refusal(
                AuthFailure(403, "insufficient_scope", f"missing scope: {missing}", wanted)
            )

    def refusal(self, failure: AuthFailure) -> Rejection:
        assert self.bearer is not None
        header = self.bearer.challenge(failure).encode("latin-1", "replace")
        code = INSUFFICIENT_SCOPE if failure.status == 403 else UNAUTHENTICATED
        kind = "Forbidden" if failure.status == 403 else "Unauthorized"
        return Rejection(
            failure.status,
            McpError(code, f"{kind}: {failure.description}"),
            [(b"www-authenticate", header)],
        )

    def _principal(self, token: Principal, raw: str | None) -> Caller:
        claims = dict(token.claims)
        name = claims.get(self.config.principal_claim)
        if not isinstance(name, str) or not name:
            raise self.refusal(
                AuthFailure(
                    401, "invalid_token", f"the token has no {self.config.principal_claim!r} claim"
                )
            )
        groups: Any = claims.get(self.config.groups_claim) or ()
        if isinstance(groups, str):
            groups = groups.split()
        return Caller(name, _strings(groups), claims, token.scopes, subject_token=raw)


def needed_met(principal: Caller, needed: Sequence[str]) -> bool:
    return set(needed) <= principal.scopes


def _strings(values: object) -> tuple[str, ...]:
    return tuple(str(v) for v in values) if isinstance(values, (list, tuple)) else ()
