"""One upstream MCP server behind the gateway: a pooled client, its listings, its health.

Each upstream gets exactly one long-lived :class:`~mcpkit.client.Client` (one legacy session
or one stdio process), never one per call.  A dead stdio server is restarted with backoff;
while an upstream is down its requests fail at once with a clear error and the other
upstreams keep serving.  Listings are cached until the upstream's ``ttlMs`` runs out or it
says its list changed (legacy notification or modern listen stream).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio

from ..client import Client
from ..compose.bridge import FrontCall, Fronts
from ..compose.proxy import UpstreamUnavailable, legacy_subscription
from ..transports import http11
from ..transports.client_base import (
    ClientError,
    ConnectError,
    ConnectionClosedError,
    RequestTimeoutError,
    ServerError,
    TransportError,
)
from ..types.errors import INTERNAL_ERROR, McpError
from .config import UpstreamConfig
from .credentials import credentials_error, own_identity, upstream_auth
from .forward import FastLane

log = logging.getLogger("mcpkit.gateway")

LISTINGS = {
    "tools": ("tools/list", "tools"),
    "prompts": ("prompts/list", "prompts"),
    "resources": ("resources/list", "resources"),
    "templates": ("resources/templates/list", "resourceTemplates"),
}
#: How long a list without ``ttlMs`` (a legacy upstream's) is reused, at most.
LEGACY_LIST_TTL_S = 60.0
_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


class Upstream:
    def __init__(
        self,
        config: UpstreamConfig,
        on_change: Callable[[str, str, str | None], None],
        *,
        cache: bool = True,
    ) -> None:
        self.config = config
        self.cache = cache
        self.name = config.name
        self.prefix = config.prefix
        self.client: Client | None = None
        self.error: str | None = "not started"
        self._on_change = on_change
        #: kind -> (expiry on the monotonic clock, items, the upstream's cacheScope)
        self._listings: dict[str, tuple[float, list[dict[str, Any]], str]] = {}
        #: Calls in flight (``None`` for the gateway's own, e.g. listings): a retired
        #: upstream stops once none is left.
        self._inflight: list[FrontCall | None] = []
        #: Front requests with a call in flight: the upstream's input requests and log
        #: messages find their way back through them (the proxy's bridge, see
        #: :mod:`mcpkit.compose.bridge`).
        self.fronts = Fronts(config.name)
        self._restart = anyio.Event()
        self._stopping = anyio.Event()
        self._stopped = anyio.Event()
        self._running = False
        #: Set once the first connection attempt succeeded or failed.
        self.first_attempt = anyio.Event()
        self.capabilities: dict[str, Any] = {}
        self._http: Any = None
        #: The 2026-07-28 fast lane, for an http:// upstream (see .forward).
        self.lane: FastLane | None = None
        #: Resource URIs someone downstream wants updates of (see :meth:`watch`).
        self.watched: set[str] = set()
        self._tg: Any = None
        self._listen_scope: anyio.CancelScope | None = None
        #: ``[upstream.oauth]``: one token cache for the life of this entry (see .credentials)
        self._auth: Any = None

    # ------------------------------------------------------------------ lifecycle
    def _make_client(self) -> Client:
        target: Any = self.config.url or list(self.config.command)
        if self.config.kind == "openapi":
            target = self._api_server()
        kwargs: dict[str, Any] = {"timeout": self.config.timeout_s}
        if self.config.era != "auto":
            kwargs["era"] = self.config.era
        if self.config.headers:
            kwargs["headers"] = dict(self.config.headers)
        if self.config.env:
            kwargs["env"] = dict(self.config.env)
        if self.config.oauth is not None and self.config.url:
            # Tokens come from an httpx.Auth: the client's own httpx client carries it
            # (the raw fast lane and the shared pool would not), at some CPU per call.
            if self._auth is None:
                self._auth = upstream_auth(self.config.oauth, self.config.url)
            kwargs["auth"] = self._auth
            if self.config.oauth.kind == "token_exchange":  # a legacy session has one owner
                kwargs["era"] = "modern"
        elif self.config.url and self.config.url.startswith("http://") and http11.available():
            # Modern calls take the fast lane (raw pooled HTTP/1.1); the rest of the
            # client's traffic rides pooled connections parsed by httptools too: httpx's
            # default pool costs ~1 ms of CPU per forwarded call under load.
            pool = http11.Http11Pool()
            self._http = http11.pooled_client(pool)
            kwargs["http_client"] = self._http
            try:
                self.lane = FastLane(
                    self.config.url,
                    pool,
                    headers=dict(self.config.headers),
                    timeout=self.config.timeout_s,
                    on_log=self.fronts.log,
                )
            except ValueError as exc:  # httpx will say what is wrong, call by call
                log.warning("upstream %s: no fast lane: %s", self.name, exc)
        return Client(target, on_notification=self._notified, **self.fronts.callbacks(), **kwargs)

    def _api_server(self) -> Any:
        """An ``openapi`` upstream: the REST API as an MCP server in this process
        (:func:`mcpkit.compose.from_openapi`), reached through an in-memory client so it
        is routed, policed, cached and bridged like any other upstream."""
        from ..compose.openapi import from_openapi

        config = self.config
        assert config.spec is not None  # (the config checks it)
        return from_openapi(
            config.spec,
            base_url=config.base_url,
            headers=dict(config.headers),
            name=config.name,
            timeout=config.timeout_s,
        )

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the upstream connected until :meth:`stop` (or cancelled); reconnect or
        restart it with backoff when it fails."""
        delay = 0.5
        started = False
        self._running = True
        try:
            while not self._stopping.is_set():
                client = self._make_client()
                try:
                    # Connected and closed in this task with nothing in between: the
                    # client's task groups must be exited from the scope they were entered in.
                    async with client:
                        info = client.server_info
                        self.client = client
                        self.error = None
                        self.capabilities = dict(info.capabilities)
                        self._listings.clear()
                        delay = 0.5
                        if not started:
                            started = True
                            self.first_attempt.set()
                            task_status.started()
                        self._on_change(self.name, "all", None)
                        try:
                            await self._watch(client)
                        finally:
                            # Before the client closes, so that no new call picks a
                            # client that is shutting down ("used outside async with").
                            self.client = None
                except Exception as exc:
                    if not self._stopping.is_set():
                        self.error = str(exc) or type(exc).__name__
                        log.warning("upstream %s: %s", self.name, self.error)
                finally:
                    self.client = None
                    http, self._http = self._http, None
                    self.lane = None
                    if http is not None:  # (closes the pool the lane shared)
                        with anyio.CancelScope(shield=True):
                            await http.aclose()
                if not started:
                    started = True
                    self.first_attempt.set()
                    task_status.started()
                with anyio.move_on_after(delay):
                    await self._stopping.wait()
                delay = min(delay * 2, 10.0)
        finally:
            self.error = "stopped"
            self._stopped.set()

    async def stop(self, timeout: float = 10.0) -> None:
        """Close the upstream's client (and stop its process) without cancelling it: a
        stdio server shut down from a cancelled task would only be killed after its
        grace periods ran out."""
        self._stopping.set()
        self._restart.set()
        if not self._running:
            return
        with anyio.move_on_after(timeout):
            await self._stopped.wait()

    async def retire(self, grace: float = 0.5, timeout: float | None = None) -> None:
        """Stop once no call is in flight (a config reload removed or replaced this
        upstream): calls that started on it finish on it.  ``grace`` covers a call that
        picked this upstream but has not reached :meth:`call` yet; ``timeout`` (default:
        the upstream's request timeout) bounds the wait."""
        limit = self.config.timeout_s if timeout is None else timeout
        with anyio.move_on_after(limit):
            while True:
                while self._inflight:
                    await anyio.sleep(0.05)
                await anyio.sleep(grace)
                if not self._inflight:
                    break
        await self.stop()

    async def _watch(self, client: Client) -> None:
        """Stay connected until the upstream is found dead: listen for list changes and
        watched resources (modern upstreams), keep the legacy resource subscriptions,
        check its health periodically (a stdio server may die while idle)."""
        restart = self._restart = anyio.Event()
        if self._stopping.is_set():
            return
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if client.era == "modern":
                caps = self.capabilities
                want = {
                    kind: bool((caps.get(kind) or {}).get("listChanged"))
                    for kind in ("tools", "prompts", "resources")
                }
                if any(want.values()) or self.subscribable():
                    tg.start_soon(self._listen, client, want)
            else:
                for uri in sorted(self.watched):
                    tg.start_soon(self._legacy_subscription, client, uri, True)
            if self.config.health_interval > 0:
                tg.start_soon(self._check_health, client)
            await restart.wait()
            self._tg = None
            tg.cancel_scope.cancel()
        raise ConnectionError(self.error or "restart requested")

    def subscribable(self) -> bool:
        return bool((self.capabilities.get("resources") or {}).get("subscribe"))

    def watch(self, uri: str, wanted: bool) -> None:
        """Someone downstream started (or stopped) watching ``uri``: a modern upstream's
        listen stream is reopened with the new resource set, a legacy upstream gets
        ``resources/subscribe`` (or ``unsubscribe``)."""
        if (uri in self.watched) == wanted:
            return
        if wanted:
            self.watched.add(uri)
        else:
            self.watched.discard(uri)
        client, tg = self.client, self._tg
        if client is None or tg is None:
            return  # (re)connecting: the new connection starts from self.watched
        if client.era == "modern":
            if self._listen_scope is not None:
                self._listen_scope.cancel()
        elif self.subscribable():
            tg.start_soon(self._legacy_subscription, client, uri, wanted)

    async def _legacy_subscription(self, client: Client, uri: str, wanted: bool) -> None:
        await legacy_subscription(client, uri, wanted, f"upstream {self.name}", log)

    async def _listen(self, client: Client, want: dict[str, bool]) -> None:
        while True:
            uris = sorted(self.watched) if self.subscribable() else []
            scope = self._listen_scope = anyio.CancelScope()
            with scope:
                try:
                    async with client.listen(
                        tools=want["tools"],
                        prompts=want["prompts"],
                        resources=want["resources"],
                        resource_uris=uris,
                    ) as sub:
                        async for note in sub:
                            self._handle_change(note.method, note.params)
                except ServerError as exc:  # it answered, but will not stream: live without
                    log.info("upstream %s refused subscriptions/listen: %s", self.name, exc)
                    return
                except Exception as exc:
                    self._fail(client, f"its listen stream broke: {exc}")
                    return
                # A graceful end of the stream: the server is going away.
                self._fail(client, "it ended its listen stream")
                return
            # cancelled by watch(): listen again with the new resource set

    async def _check_health(self, client: Client) -> None:
        interval = self.config.health_interval
        while True:
            await anyio.sleep(interval)
            try:
                await client.ping(timeout=max(interval, 5.0))
            except ServerError:
                continue  # an error answer is still an answer
            except RequestTimeoutError as exc:
                log.warning("upstream %s is slow to answer: %s", self.name, exc)
            except (TransportError, OSError) as exc:
                self._fail(client, f"health check failed: {exc}")
                return

    def mark_dead(self, reason: str) -> None:
        self.error = reason
        self._restart.set()

    def _fail(self, client: Client, reason: str) -> None:
        """``client`` failed; restart unless it was already replaced."""
        if client is self.client:
            log.warning("upstream %s: %s; reconnecting", self.name, reason)
            self.mark_dead(reason)

    def _notified(self, note: Any) -> None:
        self._handle_change(note.method, note.params)

    def _handle_change(self, method: str, params: dict[str, Any]) -> None:
        kind = _CHANGED.get(method)
        if kind is not None:
            self._listings.pop(kind, None)
            if kind == "resources":
                self._listings.pop("templates", None)
            self._on_change(self.name, kind, None)
        elif method == "notifications/resources/updated":
            self._on_change(self.name, "resource", params.get("uri"))

    # ------------------------------------------------------------------ calls
    def live(self) -> Client:
        if self.client is None:
            raise UpstreamUnavailable(self.name, self.error or "not connected")
        return self.client

    #: See :class:`~mcpkit.gateway.replicas.ReplicaSet` (``safe`` is its retry flag).
    replicated = False

    async def call(
        self,
        fn: Callable[[Client], Awaitable[Any]],
        front: FrontCall | None = None,
        *,
        safe: bool = False,
    ) -> Any:
        """Run ``fn(client)``; a transport failure marks the upstream for restart.

        Errors the upstream answered with pass through as they are; failures to reach it
        become :class:`UpstreamUnavailable`; other client-side failures (timeouts, invalid
        answers) an internal error naming the upstream."""
        client = self.live()
        token = self.fronts.enter(front) if front is not None else None
        self._inflight.append(front)
        try:
            return await fn(client)
        except McpError:
            raise
        except RequestTimeoutError as exc:  # (a TimeoutError, hence an OSError: not dead)
            raise McpError(INTERNAL_ERROR, f"Upstream {self.name!r} failed: {exc}") from None
        except (
            ConnectError,
            ConnectionClosedError,
            ConnectionError,
            OSError,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ) as exc:
            self._fail(client, str(exc) or type(exc).__name__)
            raise UpstreamUnavailable(self.name, str(exc) or type(exc).__name__) from None
        except ClientError as exc:
            raise McpError(INTERNAL_ERROR, f"Upstream {self.name!r} failed: {exc}") from None
        except Exception as exc:  # an OAuth failure of [upstream.auth], as the caller's error
            converted = credentials_error(self.name, exc) if self._auth is not None else None
            if converted is None:
                raise
            raise converted from None
        finally:
            self._inflight.remove(front)
            if front is not None and token is not None:
                self.fronts.leave(front, token)

    async def listing(self, kind: str) -> list[dict[str, Any]]:
        cached = self._listings.get(kind)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        method, member = LISTINGS[kind]
        if not self.offers(kind):
            return []
        page_items: list[dict[str, Any]] = []
        cursor: str | None = None
        ttl_ms: int | None = None
        scope = "public"
        for _ in range(100):
            params = {"cursor": cursor} if cursor else None
            with own_identity():  # cached for every caller: never one caller's view
                page = await self.call(partial(_request, method=method, params=params))
            items = page.get(member) or []
            page_items.extend(i for i in items if isinstance(i, dict))
            ttl = page.get("ttlMs")
            if isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
                ttl = max(0, int(ttl))  # a negative ttlMs means 0
                ttl_ms = ttl if ttl_ms is None else min(ttl_ms, ttl)
            if page.get("cacheScope") == "private":
                scope = "private"
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
        if not self.cache:
            ttl_ms = 0
        # Legacy upstreams give no ttlMs: keep their lists until they say they changed
        # (their notifications reach us on the session's GET stream), at most a minute.
        ttl_s = (ttl_ms / 1000.0) if ttl_ms is not None else LEGACY_LIST_TTL_S
        self._listings[kind] = (time.monotonic() + ttl_s, page_items, scope)
        return page_items

    def offers(self, kind: str) -> bool:
        """Whether the upstream has ``kind`` (tools, prompts, resources, templates) at all."""
        capability = "resources" if kind == "templates" else kind
        return not self.capabilities or capability in self.capabilities

    def freshness(self, kind: str) -> tuple[int, str]:
        """How much longer (ms) the last listing of ``kind`` may be reused, and its scope."""
        if not self.offers(kind):
            return 2**31 - 1, "public"  # nothing to go stale
        cached = self._listings.get(kind)
        if cached is None:
            return 0, "public"
        return max(0, int((cached[0] - time.monotonic()) * 1000)), cached[2]


async def _request(client: Client, method: str, params: dict[str, Any] | None) -> Any:
    return await client.request(method, params)
