"""Serverless mode: the Streamable HTTP app configured for a function platform.

A function instance (a Lambda container, a Cloud Run/Functions instance) is created and
frozen by the platform, may serve one request or a thousand, and shares nothing with its
siblings but what the deployment gives all of them: environment variables and external
services.  So :func:`serverless_app` refuses, at build time and with a message saying
what to do, everything that silently depends on one long-lived process:

* **MRTR sealing keys** must come from ``MCPKIT_SEALING_KEYS`` or a shared state backend.
  A per-instance key (or the key file a long-lived server creates in its working
  directory, which on Lambda is read-only anyway) breaks the moment the retry of an
  ``input_required`` round lands on another instance.
* **Legacy (2025-11-25) sessions** live in one process unless the backend is Redis; without
  it the app serves the stateless 2026-07-28 era only.
* **Task-backed tools** run after the response is sent; a frozen instance never finishes
  them and no worker exists to pick them up, so they are refused.

The server's lifespan is entered once per instance, on the first request (the app does
that by itself when no ASGI lifespan events arrive; Mangum's per-invocation lifespan is
switched off by :func:`~mcpkit.serverless.lambda_handler`).

The DNS-rebinding guard of a loopback server (accept only loopback ``Host`` names) would
refuse every request behind API Gateway or a function URL, whose host names the platform
mints per deployment.  Serverless mode replaces it with an allow-list: the platform's own
domains by suffix (a request reaching the function through them was routed by the
platform to this very deployment), loopback (local testing) and whatever
``MCPKIT_ALLOWED_HOSTS`` adds (custom domains; ``*.example.com`` for a suffix).  ``*``
turns the check off, explicitly.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any, TypedDict

from ..protocol import headers as hdr
from ..protocol.sealing import Keyring
from ..server import Server
from ..transports.http import HttpOptions, McpHttpApp
from ..transports.http.asgi import (
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    read_body_now,
    send_error,
)
from ..transports.http.security import LOOPBACK_HOSTS, HostPolicy
from ..types import jsonrpc
from ..types.codec import DecodeError, decode
from ..types.errors import INVALID_REQUEST, McpError

_METHOD = hdr.METHOD.encode()
ENV_HOSTS = "MCPKIT_ALLOWED_HOSTS"
ENV_ORIGINS = "MCPKIT_ALLOWED_ORIGINS"

#: Host names AWS gives an API Gateway (REST v1, HTTP API v2) stage and a function URL.
AWS_SUFFIXES = (".amazonaws.com", ".on.aws")
#: Host names Google gives a Cloud Run service and a Cloud Function.
GCP_SUFFIXES = (".run.app", ".cloudfunctions.net")

LISTEN_REFUSAL = (
    "subscriptions/listen needs a streaming response, and this platform buffers the whole "
    "response until the function returns: poll instead (re-read with resources/read or the "
    "list methods; results carry ttl hints), or serve the same server where responses "
    "stream (Cloud Run, `mcpkit serve --http`)"
)


class ServerlessError(RuntimeError):
    """The server cannot run correctly on a function platform as configured."""


def _split_env(name: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]


def host_policy(
    platform_suffixes: Iterable[str],
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
) -> HostPolicy:
    """The Host/Origin allow-list of a serverless app (module docstring).  ``allowed_hosts``
    and ``allowed_origins`` default to ``MCPKIT_ALLOWED_HOSTS``/``MCPKIT_ALLOWED_ORIGINS``."""
    hosts = list(_split_env(ENV_HOSTS) if allowed_hosts is None else allowed_hosts)
    origins = _split_env(ENV_ORIGINS) if allowed_origins is None else list(allowed_origins)
    origin_set = frozenset(o.rstrip("/").lower() for o in origins)
    if "*" in hosts:
        return HostPolicy(allowed_hosts=None, allowed_origins=origin_set)
    exact = set(LOOPBACK_HOSTS)
    suffixes = list(platform_suffixes)
    for entry in hosts:
        entry = entry.lower()
        if entry.startswith("*."):
            suffixes.append(entry[1:])
        elif "*" in entry:
            raise ServerlessError(
                f"allowed host {entry!r}: use an exact name, '*.domain' for a suffix, or '*'"
            )
        else:
            exact.add(entry)
    return HostPolicy(frozenset(exact), origin_set, allowed_suffixes=tuple(suffixes))


def _is_shared(url: str) -> bool:
    return url.startswith(("redis://", "rediss://", "unix://"))


def check_server(server: Server, legacy: bool | None) -> bool:
    """Refuse what cannot work on a function platform, and give the server the
    environment's sealing keys (they win over the backend's); returns whether legacy
    sessions are served."""
    tasks = sorted(name for name, tool in server.tools.items() if tool.task_support != "forbidden")
    if tasks:
        raise ServerlessError(
            f"task-backed tools cannot run serverless (no worker outlives the invocation): "
            f"{', '.join(tasks)}; register them without task= or serve with `mcpkit serve`"
        )
    shared = _is_shared(server.state.url)
    if legacy and not shared:
        raise ServerlessError(
            "legacy (2025-11-25) sessions need a shared state backend on a function platform: "
            "Server(state='redis://...'), or leave legacy off to serve 2026-07-28 only"
        )
    keys = Keyring.from_env()
    if keys is not None:
        server.keyring = keys
    elif not shared:
        raise ServerlessError(
            "set MCPKIT_SEALING_KEYS (a secret shared by every instance) or use a Redis "
            "state backend: a per-instance sealing key breaks MRTR retries that land on "
            "another instance"
        )
    return shared if legacy is None else legacy


class ServerlessOptions(TypedDict, total=False):
    """What each platform adapter hands on to :func:`serverless_app` as given: whether to
    serve legacy sessions, and the hosts and origins to allow beside the platform's."""

    legacy: bool | None
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None


def serverless_app(
    server: Server,
    *,
    path: str = "/mcp",
    legacy: bool | None = None,
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    platform_suffixes: Iterable[str] = AWS_SUFFIXES + GCP_SUFFIXES,
    buffered: bool = False,
) -> Any:
    """``server`` as an ASGI app for a function platform (checks in the module docstring).

    ``legacy``: serve 2025-11-25 sessions (default: when the state backend is Redis).
    ``buffered``: the platform delivers the response only when the function returns
    (Lambda): answers are plain JSON when the client accepts JSON, and listen streams and
    legacy GET streams are refused.  The plain app (``buffered=False``) suits Cloud Run.
    """
    serve_legacy = check_server(server, legacy)
    if not serve_legacy:
        # server/discover lists the versions the server speaks; a client reading 2025-11-25
        # there would fall back to a legacy session this endpoint refuses.
        server.legacy_versions = ()
    options = HttpOptions(
        path=path,
        legacy=serve_legacy,
        host_policy=host_policy(platform_suffixes, allowed_hosts, allowed_origins),
    )
    app = McpHttpApp(server, options)
    return BufferedResponses(app) if buffered else app


class BufferedResponses:
    """ASGI wrapper for platforms that buffer the response (Lambda behind API Gateway or a
    function URL).  An SSE answer would arrive in one piece anyway, after the function
    returned, so a client that accepts JSON gets the plain JSON answer (progress and log
    notifications, which could only arrive together with it, are left out); streams that
    never end (``subscriptions/listen``, the legacy GET stream) are refused up front,
    instead of holding the function until its timeout."""

    __slots__ = ("app",)

    def __init__(self, app: McpHttpApp) -> None:
        self.app = app

    @property
    def server(self) -> Any:
        return self.app.server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method")
        raw = scope.get("headers") or []
        if method == "GET":
            allow = b"POST, DELETE" if self.app.options.legacy else b"POST"
            failure = McpError(INVALID_REQUEST, "Method Not Allowed: this platform cannot stream")
            await send_error(send, 405, failure, headers=[(b"allow", allow)])
            return
        headers: list[tuple[bytes, bytes]] = []
        for name, value in raw:
            lowered = name.lower()
            if lowered == b"accept":
                accept = value.lower()
                if b"application/json" in accept or b"*/*" in accept:
                    value = b"application/json"
            elif lowered == _METHOD and value.strip() == b"subscriptions/listen":
                await self._refuse_listen(receive, send)
                return
            headers.append((name, value))
        scope = dict(scope)
        scope["headers"] = headers
        await self.app(scope, receive, send)

    async def _refuse_listen(self, receive: Receive, send: Send) -> None:
        """The refusal, answering the request's id when its body says which (the platform
        has the whole body already: reading it costs nothing)."""
        request_id = None
        with contextlib.suppress(BodyTooLarge, BodyTimeout, ClientGone, DecodeError):
            limit = self.app.options.max_body_bytes
            message = decode(await read_body_now(receive, limit, None, 5.0))
            request_id = jsonrpc.answerable_id(message)
        await send_error(send, 400, McpError(INVALID_REQUEST, LISTEN_REFUSAL), request_id)
