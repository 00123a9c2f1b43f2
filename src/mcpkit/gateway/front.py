"""The gateway's HTTP surface around ``/mcp``: probes for orchestrators and CORS.

Probes (no authentication: they say nothing about upstream data):

* ``/livez``: 200 while the process serves requests.  A liveness probe must not depend on
  upstreams, or one upstream outage makes the orchestrator restart a healthy gateway.
* ``/readyz``: 200 when the upstreams that ``[gateway] ready`` names are connected:
  ``"all"`` (the default), ``"any"``, or a list of upstream names, and the state store
  (Redis, SQLite) answers.  503 otherwise; the body gives every upstream's state (``up``
  or ``down``) and the store's kind and state either way.  Why an upstream is down (an
  internal URL, an errno) is the log's, and the body's only for a request that carries
  the metrics token.
* ``/healthz``: an alias of ``/readyz`` (the same answer), kept for existing probes.

``/metrics`` and the probes pass the same Host/Origin policy as ``/mcp`` (a foreign
``Host`` is refused with 403: a DNS-rebinding page must not read them either), and with
``[gateway] metrics_token`` set, ``/metrics`` wants ``Authorization: Bearer <token>``.

CORS is opt-in (``[gateway] cors_origins``): only listed origins get
``Access-Control-Allow-*`` headers and preflight answers.  Browsers need them to call a
gateway on another origin; without the list the gateway sends none, and the transport keeps
refusing foreign ``Origin`` values with 403 (DNS-rebinding protection).
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ..compose.replicas import AnyUpstream
from ..state.base import StateBackend
from ..transports.http.asgi import Scope, Send, header_map, send_bytes, send_error, send_json
from ..transports.http.security import HostPolicy
from ..types.errors import INVALID_REQUEST, McpError
from .config import GatewayConfig

if TYPE_CHECKING:
    from .server import GatewayServer

PROBES = ("/livez", "/readyz", "/healthz")
#: What the operations endpoints answer on (``/metrics`` and the probes).
OPERATIONS = ("/metrics", *PROBES)
#: How long /readyz waits on the state store's answer before calling it down.
STATE_PING_S = 2.0
_ALLOW_METHODS = b"GET, POST, DELETE, OPTIONS"
_EXPOSE = b"mcp-session-id, mcp-protocol-version, www-authenticate, retry-after"


async def operations(
    path: str, scope: Scope, policy: HostPolicy, server: GatewayServer, send: Send
) -> None:
    """Answer ``/metrics`` or a probe (``path``, one of :data:`OPERATIONS`): after the
    Host/Origin policy of ``/mcp``, and for ``/metrics`` the metrics token when set."""
    headers = header_map(scope)
    refusal = _refused_by(policy, headers)
    if refusal is not None:
        await send_error(send, 403, McpError(INVALID_REQUEST, refusal))
        return
    config = server.config
    trusted = _has_token(config.metrics_token, headers)
    if path == "/metrics":
        if config.metrics_token is not None and not trusted:
            challenge = [(b"www-authenticate", b'Bearer realm="metrics"')]
            await send_error(send, 401, McpError(INVALID_REQUEST, "Unauthorized"), None, challenge)
            return
        up = {u.name: u.client is not None for u in server.upstreams}
        body, content_type = server.metrics.render(up)
        await send_bytes(send, 200, body, [(b"content-type", content_type.encode())])
        return
    state = await _state_answers(server.state) if path != "/livez" else True
    await probe(
        path, config, server.upstreams, send, state=(server.state.kind, state), details=trusted
    )


def _refused_by(policy: HostPolicy, headers: dict[str, str]) -> str | None:
    """Why the Host/Origin policy refuses the request (None: it passes)."""
    if not policy.host_ok(headers.get("host")):
        return "Forbidden: Host header not allowed (DNS rebinding protection)"
    if not policy.origin_ok(headers.get("origin")):
        return "Forbidden: Origin not allowed"
    return None


def _has_token(token: str | None, headers: dict[str, str]) -> bool:
    """Whether the request carries the metrics token (``Authorization: Bearer``)."""
    if token is None:
        return False
    scheme, _, given = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


async def _state_answers(state: StateBackend) -> bool:
    """Whether the state store answers within :data:`STATE_PING_S`."""
    with anyio.move_on_after(STATE_PING_S):
        return await state.ping()
    return False


def readiness(
    config: GatewayConfig, upstreams: Sequence[AnyUpstream], details: bool = False
) -> tuple[bool, dict[str, str]]:
    """(ready, state of every upstream) per the configured ``ready`` rule; ``details``
    adds why an upstream is down (internal: for the operator only)."""
    states = {u.name: _upstream_state(u, details) for u in upstreams}
    up = {u.name for u in upstreams if u.client is not None}
    rule = config.ready
    if rule == "all":
        ready = len(up) == len(upstreams)
    elif rule == "any":
        ready = bool(up)
    else:
        ready = set(rule) <= up
    return ready, states


def _upstream_state(upstream: AnyUpstream, details: bool) -> str:
    if upstream.client is not None:
        return "up"
    return f"down: {upstream.error}" if details else "down"


async def probe(
    path: str,
    config: GatewayConfig,
    upstreams: Sequence[AnyUpstream],
    send: Send,
    *,
    state: tuple[str, bool] = ("memory", True),
    details: bool = False,
) -> None:
    """Answer a probe; ``state`` is the state store's (kind, whether it answers)."""
    if path == "/livez":
        await send_bytes(send, 200, b"ok\n", [(b"content-type", b"text/plain")])
        return
    ready, states = readiness(config, upstreams, details)
    kind, answers = state
    rule = config.ready if isinstance(config.ready, str) else list(config.ready)
    body = {
        "ready": ready and answers,
        "rule": rule,
        "upstreams": states,
        "stateStore": {"kind": kind, "up": answers},
    }
    await send_json(send, 200 if body["ready"] else 503, body)


class Cors:
    """Adds CORS headers for the configured origins (exact, case-insensitive match)."""

    def __init__(self, origins: Sequence[str]) -> None:
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)

    def origin(self, headers: dict[str, str]) -> str | None:
        """The request's Origin if CORS applies to it."""
        origin = headers.get("origin")
        if origin is None or origin.rstrip("/").lower() not in self.origins:
            return None
        return origin

    async def preflight(self, origin: str, headers: dict[str, str], send: Send) -> None:
        asked = headers.get("access-control-request-headers", "")
        out = [
            *self._common(origin),
            (b"access-control-allow-methods", _ALLOW_METHODS),
            (b"access-control-max-age", b"600"),
        ]
        if asked:  # echo: "*" does not cover Authorization, and the Mcp-Param-* set is open
            out.append((b"access-control-allow-headers", asked.encode("latin-1", "replace")))
        await send_bytes(send, 204, b"", out)

    def wrap(self, origin: str, send: Send) -> Send:
        extra = [*self._common(origin), (b"access-control-expose-headers", _EXPOSE)]

        async def cors_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        return cors_send

    @staticmethod
    def _common(origin: str) -> list[tuple[bytes, bytes]]:
        return [
            (b"access-control-allow-origin", origin.encode("latin-1", "replace")),
            (b"vary", b"Origin"),
        ]
