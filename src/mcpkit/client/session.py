"""Era negotiation and the request envelope: everything between "call this method" and
the transport.

Connecting (``era="auto"``), per the 2026-07-28 backward-compatibility rules:

1. A server remembered in the era cache is spoken to in its era straight away; if that
   fails it is forgotten and probed again.
2. Probe with ``server/discover`` carrying the modern ``_meta``.  A ``DiscoverResult``
   naming a version we speak => modern.  ``-32022`` => modern: retry with a version from
   ``data.supported`` (even the one just sent; a server may reject the first try on
   purpose).  ``-32020``/``-32021`` => modern and unhappy: raised.  *Anything else* (another
   error code, an HTTP error without a modern body, garbage, a timeout) => legacy; the
   fallback never keys on one error code, since legacy servers answer ``-32601``,
   ``-32602``, ``-32600``, HTTP 400/404/405 or nothing at all.
3. Legacy: ``initialize`` with our newest legacy version, check the answer, send
   ``notifications/initialized``.

Per request, the modern era gets a fresh ``_meta`` (protocol version, client
capabilities, client info, progress token, log level, W3C trace context); ``-32022`` on
any request switches version and retries.  The legacy era re-initializes once when an
HTTP session expired (404) and retries.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from ..transports.client_base import (
    ClientTransport,
    ConnectError,
    ConnectionClosedError,
    HttpStatusError,
    ProgressHandler,
    ProtocolViolationError,
    RequestTimeoutError,
    ServerError,
    ServerStartupError,
    SessionExpiredError,
)
from ..types.errors import (
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..types.unset import UNSET, Unset
from ..types.versions import (
    LOG_LEVEL_RANK,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    TASKS_EXTENSION,
    Era,
)
from . import telemetry
from .callbacks import Callbacks
from .errors import InvalidResultError, VersionNegotiationError
from .models import ServerInfo
from .options import DEFAULT_ERA_CACHE, ClientOptions

log = logging.getLogger("mcpkit.client")

#: Methods that get a progress token even without a progress callback, so that a server
#: that reports progress keeps a long call alive past the timeout.
_PROGRESS_BY_DEFAULT = frozenset({"tools/call"})
_TRACE_KEYS = ("traceparent", "tracestate", "baggage")


class _NotModern(Exception):
    """The probe's answer was not a modern one: fall back to ``initialize``."""


class Session:
    """The negotiated era and version, and how each request is wrapped for it."""

    def __init__(
        self, transport: ClientTransport, options: ClientOptions, callbacks: Callbacks
    ) -> None:
        self.transport = transport
        self.options = options
        self.callbacks = callbacks
        self.era: Era | None = None
        self.version = ""
        self.info: ServerInfo | None = None
        self.log_level = options.log_level
        self._tokens = itertools.count(1)
        self._generation = 0
        self._reinit_lock = anyio.Lock()
        #: CLIENT spans and duration metrics for each request (:mod:`.telemetry`).
        self.traced = telemetry.enabled(options.telemetry)

    # ------------------------------------------------------------------ connecting
    async def connect(self) -> ServerInfo:
        try:
            return await self._connect()
        except (ConnectionClosedError, RequestTimeoutError) as exc:
            if self.transport.kind != "stdio":
                raise
            raise ServerStartupError(f"the server failed to start: {exc}") from None

    async def _connect(self) -> ServerInfo:
        cache = self.options.era_cache or DEFAULT_ERA_CACHE
        key = self.transport.server_key
        with anyio.move_on_after(self.options.startup_timeout) as scope:
            choice = self.options.era
            if self.transport.kind == "sse":  # HTTP+SSE (2024-11-05) predates 2026-07-28
                if choice == "modern":
                    raise VersionNegotiationError(
                        "era='modern' cannot be spoken over the 2024-11-05 HTTP+SSE "
                        "transport, which carries only the initialize handshake era"
                    )
                choice = "legacy"
            if choice == "legacy":
                await self._initialize()
            elif choice == "modern":
                await self._start_modern()
            else:
                cached = cache.get(key)
                try:
                    if cached is None:
                        await self._probe()
                    elif cached[0] == "legacy":
                        await self._initialize()
                    else:
                        await self._start_modern(cached[1])
                except (
                    ServerError,
                    RequestTimeoutError,
                    HttpStatusError,
                    ProtocolViolationError,
                    VersionNegotiationError,
                    InvalidResultError,
                ) as exc:
                    if cached is None:
                        raise
                    log.info(
                        "%s no longer speaks the %s era (%s); probing again", key, cached[0], exc
                    )
                    cache.forget(key)
                    await self._probe()
        if scope.cancelled_caught:
            what = ServerStartupError if self.transport.kind == "stdio" else ConnectError
            raise what(
                f"the server did not complete the connection within "
                f"{self.options.startup_timeout:g}s: {self.transport.describe()}"
            )
        assert self.info is not None and self.era is not None
        if self.options.era == "auto":
            cache.remember(key, self.era, self.version)
        return self.info

    async def _probe(self) -> None:
        try:
            await self._discover(probe=True)
            return
        except _NotModern as why:
            log.info(
                "%s did not answer server/discover as a 2026-07-28 server (%s); "
                "falling back to initialize",
                self.transport.server_key,
                why,
            )
        await self._initialize()

    async def _start_modern(self, version: str | None = None) -> None:
        self.era, self.version = "modern", version or self.options.protocol_versions[0]
        if self.options.discover:
            await self._discover(probe=False)
        else:
            self.info = ServerInfo("modern", self.version)

    async def _discover(self, *, probe: bool) -> None:
        self.era, self.version = "modern", self.version or self.options.protocol_versions[0]
        if self.version not in self.options.protocol_versions:
            self.version = self.options.protocol_versions[0]
        timeout = self.options.probe_timeout if probe else self.options.timeout
        for _attempt in range(3):
            try:
                result = await self._handshake(
                    "server/discover", lambda: {"_meta": self.meta()}, timeout
                )
            except ServerError as exc:
                if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                    self._switch_version(exc, probe=probe)
                    continue
                if probe and exc.code not in (HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY):
                    raise _NotModern(str(exc)) from None
                raise
            except (RequestTimeoutError, HttpStatusError, ProtocolViolationError) as exc:
                if probe:
                    raise _NotModern(str(exc)) from None
                raise
            self.info = self._discovered(result, probe=probe)
            return
        raise VersionNegotiationError(
            f"the server kept rejecting protocol version {self.version!r} with -32022"
        )

    def _switch_version(self, exc: ServerError, *, probe: bool) -> None:
        data = exc.data if isinstance(exc.data, dict) else {}
        raw = data.get("supported")
        supported = [v for v in raw if isinstance(v, str)] if isinstance(raw, list) else []
        for version in self.options.protocol_versions:
            if version in supported:
                self.version = version
                return
        if probe and any(v in self.options.legacy_versions for v in supported):
            raise _NotModern(f"the server supports only {supported}") from None
        raise VersionNegotiationError(
            f"the server supports protocol versions {supported}, this client "
            f"{list(self.options.protocol_versions)}"
        ) from None

    def _discovered(self, result: dict[str, Any], *, probe: bool) -> ServerInfo:
        raw = result.get("supportedVersions")
        versions = [v for v in raw if isinstance(v, str)] if isinstance(raw, list) else []
        if versions and self.version not in versions:
            common = [v for v in self.options.protocol_versions if v in versions]
            if common:
                self.version = common[0]
            elif probe and any(v in self.options.legacy_versions for v in versions):
                raise _NotModern(f"server/discover lists only {versions}")
            else:
                raise VersionNegotiationError(
                    f"the server supports protocol versions {versions}, this client "
                    f"{list(self.options.protocol_versions)}"
                )
        caps = result.get("capabilities")
        meta = result.get("_meta")
        identity = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        if not isinstance(identity, dict):
            identity = result.get("serverInfo")  # RC-era servers put it at the top level
        instructions = result.get("instructions")
        return ServerInfo(
            "modern",
            self.version,
            capabilities=caps if isinstance(caps, dict) else {},
            implementation=identity if isinstance(identity, dict) else {},
            instructions=instructions if isinstance(instructions, str) else None,
            supported_versions=tuple(versions),
        )

    async def _handshake(
        self, method: str, params: Callable[[], dict[str, Any]], timeout: float | None
    ) -> dict[str, Any]:
        """``server/discover`` or ``initialize``: sent by the transport directly (no
        session yet), in a CLIENT span of its own when tracing; ``params()`` is built
        inside it so that the ``_meta`` trace context names that span."""

        def send() -> Awaitable[dict[str, Any]]:
            wire = params()
            if self.traced:
                wire = {**wire, "_meta": {**wire.get("_meta", {}), **telemetry.inject()}}
            return self.transport.request(method, wire, timeout=timeout, max_timeout=timeout)

        if self.traced:
            return await telemetry.traced(
                method, {}, self.transport.server_key, self.version, None, send
            )
        return await send()

    async def _initialize(self) -> None:
        self.era = "legacy"
        params = {
            "protocolVersion": self.options.legacy_versions[0],
            "capabilities": self.capabilities(),
            "clientInfo": dict(self.options.client_info),
        }
        result = await self._handshake("initialize", lambda: params, self.options.timeout)
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in self.options.legacy_versions:
            raise VersionNegotiationError(
                f"the server answered initialize with protocol version {version!r}; this "
                f"client speaks {list(self.options.legacy_versions)}"
            )
        self.version = version
        caps = result.get("capabilities")
        identity = result.get("serverInfo")
        instructions = result.get("instructions")
        self.info = ServerInfo(
            "legacy",
            version,
            capabilities=caps if isinstance(caps, dict) else {},
            implementation=identity if isinstance(identity, dict) else {},
            instructions=instructions if isinstance(instructions, str) else None,
            supported_versions=(version,),
        )
        await self.transport.notify(
            "notifications/initialized", headers={"MCP-Protocol-Version": version}
        )
        await self.transport.legacy_session_started(version)
        if self.log_level is not None and self.info.supports("logging"):
            await self.request("logging/setLevel", {"level": self.log_level})

    # ------------------------------------------------------------------ envelope
    def capabilities(self) -> dict[str, Any]:
        caps = self.callbacks.capabilities(self.era or "modern")
        options = self.options
        if options.tasks and self.era != "legacy":
            caps["extensions"] = {TASKS_EXTENSION: {}}
        if not options.extra_capabilities:
            return caps
        for key, value in options.extra_capabilities.items():
            if isinstance(value, dict) and isinstance(caps.get(key), dict):
                caps[key] = {**caps[key], **value}
            else:
                caps[key] = value
        return caps

    def meta(self, progress_token: str | None = None) -> dict[str, Any]:
        """The per-request ``_meta`` of the modern era."""
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: self.version,
            META_CLIENT_CAPABILITIES: self.capabilities(),
            META_CLIENT_INFO: dict(self.options.client_info),
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        if progress_token is not None:
            meta["progressToken"] = progress_token
        provider = self.options.trace_context
        trace = provider() if provider is not None else _otel_context()
        if trace:
            meta.update(_trace_keys(trace))
        return meta

    def set_log_level(self, level: str) -> None:
        if level not in LOG_LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}; one of {list(LOG_LEVEL_RANK)}")
        self.log_level = level

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | Unset | None = UNSET,
        on_progress: ProgressHandler | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One request in the negotiated era (raises :class:`ClientError` subclasses)."""
        if self.era is None:
            raise RuntimeError("the client is not connected (use 'async with Client(...)')")
        if self.traced:
            return await telemetry.traced(
                method,
                params or {},
                self.transport.server_key,
                self.version,
                getattr(self.transport, "session_id", None),
                functools.partial(
                    self._send,
                    method,
                    params,
                    timeout=timeout,
                    on_progress=on_progress,
                    meta=meta,
                    headers=headers,
                ),
            )
        return await self._send(
            method, params, timeout=timeout, on_progress=on_progress, meta=meta, headers=headers
        )

    async def _send(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | Unset | None,
        on_progress: ProgressHandler | None,
        meta: Mapping[str, Any] | None,
        headers: dict[str, str] | None,
    ) -> dict[str, Any]:
        base = params or {}
        base_meta = base.get("_meta")
        token = None
        if on_progress is not None or method in _PROGRESS_BY_DEFAULT:
            token = f"mcpkit-{next(self._tokens)}"
        limit = self.options.timeout if timeout is UNSET else timeout
        max_limit = None
        if limit is not None:
            max_limit = self.options.max_timeout
            if max_limit is not None and max_limit < limit:
                max_limit = limit
        version_retries = reinitialized = 0
        while True:
            generation = self._generation
            wire = dict(base)
            if self.era == "modern":
                own_meta = self.meta(token)  # a fresh dict; the caller's _meta goes first
                if base_meta:
                    own_meta = {**base_meta, **own_meta}
            else:
                own_meta = dict(base_meta or {})
                if token is not None:
                    own_meta["progressToken"] = token
            if meta:
                own_meta.update(meta)
            if self.traced:  # our CLIENT span is current: it is the server span's parent
                own_meta.update(telemetry.inject())
            if own_meta:
                wire["_meta"] = own_meta
            try:
                return await self.transport.request(
                    method,
                    wire,
                    timeout=limit,
                    max_timeout=max_limit,
                    on_progress=on_progress,
                    headers=headers,
                )
            except ServerError as exc:
                if (
                    self.era == "modern"
                    and exc.code == UNSUPPORTED_PROTOCOL_VERSION
                    and version_retries < 2
                ):
                    version_retries += 1
                    self._switch_version(exc, probe=False)
                    continue
                raise
            except SessionExpiredError:
                if self.era != "legacy" or reinitialized:
                    raise
                reinitialized += 1
                await self._reinitialize(generation)

    async def _reinitialize(self, generation: int) -> None:
        async with self._reinit_lock:
            if generation != self._generation:
                return  # another request already did it
            log.info("legacy session expired; initializing a new one")
            await self._initialize()
            self._generation += 1

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        headers = None
        if self.era == "modern":
            headers = {"MCP-Protocol-Version": self.version, "Mcp-Method": method}
        await self.transport.notify(method, params, headers=headers)


_OTEL_PROPAGATE: Any = None
_OTEL_CHECKED = False


def _trace_keys(carrier: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in carrier.items() if k in _TRACE_KEYS and isinstance(v, str)}


def _otel_context() -> dict[str, str]:
    """W3C trace context from OpenTelemetry's global propagator, when it is installed."""
    global _OTEL_PROPAGATE, _OTEL_CHECKED
    if not _OTEL_CHECKED:
        _OTEL_CHECKED = True
        try:
            _OTEL_PROPAGATE = importlib.import_module("opentelemetry.propagate")
        except ImportError:
            _OTEL_PROPAGATE = None
    if _OTEL_PROPAGATE is None:
        return {}
    carrier: dict[str, str] = {}
    try:
        _OTEL_PROPAGATE.inject(carrier)
    except Exception:  # a misconfigured propagator must not break requests
        return {}
    return carrier
