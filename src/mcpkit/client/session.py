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
HTTP session expired (404) and retries.  Each of those differences is a method of the
session's :class:`~mcpkit.client.era.EraRules`, picked once here; this module only
orchestrates.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypedDict, Unpack

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
from ..types.unset import UNSET, Unset
from ..types.versions import (
    LOG_LEVEL_RANK,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    TASKS_EXTENSION,
    Era,
)
from . import telemetry
from .callbacks import Callbacks
from .era import ERAS, LEGACY, MODERN, EraRules, NotModern, pinned, remembered
from .errors import InvalidResultError, VersionNegotiationError
from .models import ServerInfo
from .options import DEFAULT_ERA_CACHE, ClientOptions

log = logging.getLogger("mcpkit.client")

#: Methods that get a progress token even without a progress callback, so that a server
#: that reports progress keeps a long call alive past the timeout.
_PROGRESS_BY_DEFAULT = frozenset({"tools/call"})
_TRACE_KEYS = ("traceparent", "tracestate", "baggage")


class RequestOptions(TypedDict, total=False):
    """The options of one raw request (:meth:`Session.request`, ``Client.request``).

    ``timeout``: seconds without an answer (progress restarts it; unset: the client's
    ``timeouts.timeout``, None: wait forever); ``on_progress``: receives each
    ``notifications/progress`` of the request; ``meta``: extra ``params._meta`` entries;
    ``headers``: extra HTTP headers for this request."""

    timeout: float | Unset | None
    on_progress: ProgressHandler | None
    meta: Mapping[str, Any] | None
    headers: dict[str, str] | None


class Session:
    """The negotiated era and version, and how each request is wrapped for it."""

    def __init__(
        self, transport: ClientTransport, options: ClientOptions, callbacks: Callbacks
    ) -> None:
        self.transport = transport
        self.options = options
        self.callbacks = callbacks
        #: The era's rules, picked once when connecting (None until then).
        self.rules: EraRules | None = None
        self.version = ""
        self.info: ServerInfo | None = None
        self.log_level = options.features.log_level
        self._tokens = itertools.count(1)
        self._generation = 0
        self._reinit_lock = anyio.Lock()
        #: CLIENT spans and duration metrics for each request (:mod:`.telemetry`).
        self.traced = telemetry.enabled(options.features.telemetry)

    @property
    def era(self) -> Era | None:
        """The negotiated era's name (None before connecting)."""
        return self.rules.name if self.rules is not None else None

    # ------------------------------------------------------------------ connecting
    async def connect(self) -> ServerInfo:
        try:
            return await self._connect()
        except (ConnectionClosedError, RequestTimeoutError) as exc:
            if self.transport.kind != "stdio":
                raise
            raise ServerStartupError(f"the server failed to start: {exc}") from None

    async def _connect(self) -> ServerInfo:
        cache = self.options.protocol.era_cache or DEFAULT_ERA_CACHE
        key = self.transport.server_key
        choice = self.options.protocol.era
        startup = self.options.timeouts.startup_timeout
        with anyio.move_on_after(startup) as scope:
            rules = pinned(choice, self.transport.kind)
            cached = cache.get(key) if rules is None else None
            if rules is not None:
                await rules.start(self)
            elif cached is None:
                await self._probe()
            else:
                try:
                    await ERAS[cached[0]].start(self, cached[1])
                except (
                    ServerError,
                    RequestTimeoutError,
                    HttpStatusError,
                    ProtocolViolationError,
                    VersionNegotiationError,
                    InvalidResultError,
                ) as exc:
                    log.info(
                        "%s no longer speaks the %s era (%s); probing again", key, cached[0], exc
                    )
                    cache.forget(key)
                    await self._probe()
        if scope.cancelled_caught:
            what = ServerStartupError if self.transport.kind == "stdio" else ConnectError
            raise what(
                f"the server did not complete the connection within "
                f"{startup:g}s: {self.transport.describe()}"
            )
        assert self.info is not None and self.rules is not None
        if remembered(choice):
            cache.remember(key, self.rules.name, self.version)
        return self.info

    async def _probe(self) -> None:
        try:
            await MODERN.discover(self, probe=True)
            return
        except NotModern as why:
            log.info(
                "%s did not answer server/discover as a 2026-07-28 server (%s); "
                "falling back to initialize",
                self.transport.server_key,
                why,
            )
        await LEGACY.start(self)

    async def handshake(
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

    # ------------------------------------------------------------------ envelope
    def capabilities(self) -> dict[str, Any]:
        """The client capabilities: what the callbacks can answer, in the era's terms
        (the modern era's until one is negotiated)."""
        rules = self.rules or MODERN
        caps = self.callbacks.capabilities(
            roots_list_changed=rules.offers("notifications/roots/list_changed")
        )
        if self.options.features.tasks and rules.declares_tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        extra = self.options.protocol.extra_capabilities
        if not extra:
            return caps
        for key, value in extra.items():
            if isinstance(value, dict) and isinstance(caps.get(key), dict):
                caps[key] = {**caps[key], **value}
            else:
                caps[key] = value
        return caps

    def identity(self) -> dict[str, Any]:
        """The members of a modern request's ``_meta`` that say who asks: the version,
        the client's info and, once set, its log level (a request relayed for another
        client carries these with that client's capabilities)."""
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: self.version,
            META_CLIENT_INFO: self.options.protocol.client_info,
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    def meta(self, progress_token: str | None = None) -> dict[str, Any]:
        """The per-request ``_meta`` of the modern era: :meth:`identity`, the client's
        capabilities, a progress token when asked for, trace context."""
        meta = self.identity()
        meta[META_CLIENT_INFO] = dict(meta[META_CLIENT_INFO])  # the request's own copy
        meta[META_CLIENT_CAPABILITIES] = self.capabilities()
        if progress_token is not None:
            meta["progressToken"] = progress_token
        provider = self.options.features.trace_context
        trace = provider() if provider is not None else _otel_context()
        if trace:
            meta.update(_trace_keys(trace))
        return meta

    def set_log_level(self, level: str) -> None:
        if level not in LOG_LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}; one of {list(LOG_LEVEL_RANK)}")
        self.log_level = level

    async def request(
        self, method: str, params: dict[str, Any] | None = None, **options: Unpack[RequestOptions]
    ) -> dict[str, Any]:
        """One request in the negotiated era (raises :class:`ClientError` subclasses)."""
        if self.rules is None:
            raise RuntimeError("the client is not connected (use 'async with Client(...)')")
        if self.traced:
            return await telemetry.traced(
                method,
                params or {},
                self.transport.server_key,
                self.version,
                getattr(self.transport, "session_id", None),
                functools.partial(self._send, method, params, **options),
            )
        return await self._send(method, params, **options)

    async def _send(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | Unset | None = UNSET,
        on_progress: ProgressHandler | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        base = params or {}
        base_meta = base.get("_meta")
        token = None
        if on_progress is not None or method in _PROGRESS_BY_DEFAULT:
            token = f"mcpkit-{next(self._tokens)}"
        timeouts = self.options.timeouts
        limit = timeouts.timeout if timeout is UNSET else timeout
        max_limit = None
        if limit is not None:
            max_limit = timeouts.max_timeout
            if max_limit is not None and max_limit < limit:
                max_limit = limit
        attempt = 0
        while True:
            generation = self._generation
            rules = self.rules
            assert rules is not None  # checked by request()
            wire = dict(base)
            own_meta = rules.frame(self, base_meta, token)
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
            except (ServerError, SessionExpiredError) as exc:
                if not await rules.recover(self, exc, generation, attempt):
                    raise
                attempt += 1

    async def reinitialize(self, generation: int) -> None:
        """A new legacy session after the old one expired, once for all the requests of
        ``generation`` that found it gone."""
        async with self._reinit_lock:
            if generation != self._generation:
                return  # another request already did it
            log.info("legacy session expired; initializing a new one")
            await LEGACY.start(self)
            self._generation += 1

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """A client notification, with the era's headers."""
        headers = self.rules.notify_headers(self, method) if self.rules is not None else None
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
