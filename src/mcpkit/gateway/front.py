"""The gateway's HTTP surface around ``/mcp``: probes for orchestrators and CORS.

Probes (no authentication: they say nothing about upstream data):

* ``/livez``: 200 while the process serves requests.  A liveness probe must not depend on
  upstreams, or one upstream outage makes the orchestrator restart a healthy gateway.
* ``/readyz``: 200 when the upstreams that ``[gateway] ready`` names are connected:
  ``"all"`` (the default), ``"any"``, or a list of upstream names.  503 otherwise; the body
  gives every upstream's state either way.
* ``/healthz``: an alias of ``/readyz`` (the same answer), kept for existing probes.

CORS is opt-in (``[gateway] cors_origins``): only listed origins get
``Access-Control-Allow-*`` headers and preflight answers.  Browsers need them to call a
gateway on another origin; without the list the gateway sends none, and the transport keeps
refusing foreign ``Origin`` values with 403 (DNS-rebinding protection).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..compose.replicas import AnyUpstream
from ..transports.http.asgi import Send, send_bytes, send_json
from .config import GatewayConfig

PROBES = ("/livez", "/readyz", "/healthz")
_ALLOW_METHODS = b"GET, POST, DELETE, OPTIONS"
_EXPOSE = b"mcp-session-id, mcp-protocol-version, www-authenticate, retry-after"


def readiness(
    config: GatewayConfig, upstreams: Sequence[AnyUpstream]
) -> tuple[bool, dict[str, str]]:
    """(ready, state of every upstream) per the configured ``ready`` rule."""
    states = {u.name: ("up" if u.client is not None else f"down: {u.error}") for u in upstreams}
    up = {u.name for u in upstreams if u.client is not None}
    rule = config.ready
    if rule == "all":
        ready = len(up) == len(upstreams)
    elif rule == "any":
        ready = bool(up)
    else:
        ready = set(rule) <= up
    return ready, states


async def probe(
    path: str, config: GatewayConfig, upstreams: Sequence[AnyUpstream], send: Send
) -> None:
    if path == "/livez":
        await send_bytes(send, 200, b"ok\n", [(b"content-type", b"text/plain")])
        return
    ready, states = readiness(config, upstreams)
    rule = config.ready if isinstance(config.ready, str) else list(config.ready)
    await send_json(
        send, 200 if ready else 503, {"ready": ready, "rule": rule, "upstreams": states}
    )


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
