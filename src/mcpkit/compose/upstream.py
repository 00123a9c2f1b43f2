"""One upstream MCP server: a pooled client, its listings, its health.

The one connection manager behind both :func:`~mcpkit.compose.proxy` and the gateway's
``[[upstream]]`` entries.  Each upstream gets exactly one long-lived
:class:`~mcpkit.client.Client` (one legacy session, one HTTP pool or one stdio process),
never one per call.  A dead upstream is reconnected (a stdio server restarted) with
backoff; while it is down its requests fail at once with :class:`UpstreamUnavailable`
(503) and whatever else the owner serves keeps serving.  Health checks (a ping every
``health_interval`` seconds) find a server that died while idle.  Listings are cached
until the upstream's ``ttlMs`` runs out or it says its list changed (legacy notification
or modern listen stream); resources someone downstream watches are subscribed to there.

An ``http://`` upstream also gets the 2026-07-28 fast lane (:mod:`.lane`): raw pooled
HTTP/1.1 for modern calls, on the pool the client's own POSTs take (its pooled wire).

Credentials are hooks, so that the owner decides what identity a request carries:
``auth`` (an ``httpx.Auth``, e.g. :mod:`mcpkit.auth.client`'s client-credentials or
token-exchange flows), ``auth_error`` (an OAuth failure as the caller's error) and
``shared`` (a context in which a request is made for nobody in particular: listings,
cached for every caller).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..client import Client
from ..client.errors import ClientError
from ..server.middleware.masking import correlation_id
from ..server.mount import LISTS
from ..transports import client_base as wire
from ..transports import http11
from ..transports.client_http import HttpTransport
from ..types.errors import INTERNAL_ERROR, McpError
from .bridge import FrontCall, Fronts
from .lane import FastLane

if TYPE_CHECKING:
    import httpx
    from anyio.abc import TaskGroup, TaskStatus

    from ..client.models import Notification

T = TypeVar("T")

__all__ = ["Upstream", "UpstreamUnavailable", "connection_target"]

log = logging.getLogger("mcpkit.compose")

#: Kind (tools, prompts, resources, templates) -> (its list method, its result member).
LISTINGS = {
    ("templates" if member == "resourceTemplates" else member): (method, member)
    for method, (member, _) in LISTS.items()
}
#: How long a list without ``ttlMs`` (a legacy upstream's) is reused, at most.
LEGACY_LIST_TTL_S = 60.0
CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
#: (upstream name, what changed: tools/prompts/resources/all/resource, the resource URI)
OnChange = Callable[[str, str, str | None], None]
_CALLBACKS = ("elicitation", "url_elicitation", "sampling", "roots", "on_log")


#: What a failure to reach an upstream raises (its client is then restarted).
_UNREACHABLE = (
    wire.ConnectError,
    wire.ConnectionClosedError,
    ConnectionError,
    OSError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)


class UpstreamUnavailable(McpError):
    """The upstream cannot be reached (HTTP 503 at the front).

    The caller is told which upstream and what to do, with a correlation id
    (``data.correlationId``); ``detail`` (an internal URL, an errno) goes to the log under
    that id and stays on the exception, never in the answer."""

    def __init__(self, name: str, detail: str) -> None:
        reference = correlation_id()
        super().__init__(
            INTERNAL_ERROR,
            f"Upstream {name!r} is unavailable: it cannot be reached now; retry later "
            f"(correlation id {reference})",
            {"upstream": name, "correlationId": reference},
            http_status=503,
            http_headers=[(b"retry-after", b"1")],
        )
        self.detail = detail
        self.reference = reference
        log.warning("upstream %s unavailable [correlation id %s]: %s", name, reference, detail)


def upstream_failed(name: str, what: str, detail: object) -> McpError:
    """A call the upstream did not answer usably (``what``: in the caller's terms, e.g.
    "it did not answer in time"), as -32603 with a correlation id; ``detail`` is logged
    under that id."""
    reference = correlation_id()
    log.warning("upstream %s failed [correlation id %s]: %s", name, reference, detail)
    return McpError(
        INTERNAL_ERROR,
        f"Upstream {name!r} failed: {what} (correlation id {reference})",
        {"upstream": name, "correlationId": reference},
    )


def connection_target(target: Any) -> tuple[Any, dict[str, str], dict[str, str]]:
    """What a :class:`Client` connects to for ``target`` (a URL, a command line as a string
    or an argv list, an in-process server, a ready-made ``Client``, or one
    ``mcpServers`` entry ``{"command", "args", "env"}`` / ``{"url", "headers"}``), with
    the entry's headers and environment."""
    if isinstance(target, Mapping):
        if "url" in target:
            headers = {str(k): str(v) for k, v in (target.get("headers") or {}).items()}
            return str(target["url"]), headers, {}
        if "command" in target:
            argv = [str(target["command"]), *(str(a) for a in target.get("args") or ())]
            env = {str(k): str(v) for k, v in (target.get("env") or {}).items()}
            return argv, {}, env
        raise ValueError(f"an mcpServers entry needs 'url' or 'command', not {sorted(target)}")
    if isinstance(target, str):
        return target, {}, {}
    if isinstance(target, Sequence) and all(isinstance(a, str) for a in target):
        return list(target), {}, {}
    from ..server.server import Server

    if isinstance(target, (Client, Server)):
        return target, {}, {}
    raise TypeError(f"cannot proxy {type(target).__name__}: give a URL, a command or a Client")


class Upstream:
    """One upstream server, kept connected while :meth:`run` runs (see the module)."""

    #: See :class:`~mcpkit.compose.replicas.ReplicaSet` (``safe`` is its retry flag).
    replicated = False

    def __init__(
        self,
        name: str,
        target: Any,
        *,
        on_change: OnChange | None = None,
        timeout: float = 30.0,
        era: str = "auto",
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        health_interval: float = 10.0,
        cache: bool = True,
        auth: httpx.Auth | None = None,
        auth_error: Callable[[str, Exception], McpError | None] | None = None,
        shared: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
        prefix: str = "",
        source: Any = None,
    ) -> None:
        self.name = name
        self.target, own_headers, own_env = connection_target(target)
        self.headers = {**own_headers, **(headers or {})}
        self.env = {**own_env, **(env or {})}
        #: The URL of an HTTP upstream (None: stdio, in-process).
        self.url = self.target if isinstance(self.target, str) and "://" in self.target else None
        self.timeout = timeout
        self.era = era
        self.health_interval = health_interval
        self.cache = cache
        self._auth = auth
        self._auth_error = auth_error
        self._shared = shared
        #: The prefix its owner serves its names under (a gateway's ``prefix``).
        self.prefix = prefix
        #: What the owner built it from (a gateway compares it on reload).
        self.source = source
        self.client: Client | None = None
        self.error: str | None = "not started"
        #: ``time.monotonic()`` when the upstream was found down; None while it serves.
        self._down_since: float | None = None
        self._on_change = on_change or (lambda name, kind, uri: None)
        #: kind -> (expiry on the monotonic clock, items, the upstream's cacheScope)
        self._listings: dict[str, tuple[float, list[dict[str, Any]], str]] = {}
        #: Calls in flight (the owner's own included, e.g. listings): a retired upstream
        #: stops once none is left.
        self.busy = 0
        #: Front requests with a call in flight: the upstream's input requests and log
        #: messages find their way back through them (see :mod:`.bridge`).
        self.fronts = Fronts(name)
        self._restart = anyio.Event()
        self._stopping = anyio.Event()
        self._stopped = anyio.Event()
        self._running = False
        #: Set once the first connection attempt succeeded or failed.
        self.first_attempt = anyio.Event()
        self.capabilities: dict[str, Any] = {}
        #: The 2026-07-28 fast lane, for an http:// upstream (see .lane).
        self.lane: FastLane | None = None
        self._pool: http11.Http11Pool | None = None
        #: Resource URIs someone downstream wants updates of (see :meth:`watch`).
        self.watched: set[str] = set()
        self._tg: TaskGroup | None = None
        self._listen_scope: anyio.CancelScope | None = None

    # ------------------------------------------------------------------ lifecycle
    def _make_client(self) -> Client:
        target = self.target
        if isinstance(target, Client):
            # A client given ready-made (used once): its input requests and
            # notifications come here.
            callbacks = self.fronts.callbacks()
            for key in _CALLBACKS:
                setattr(target.callbacks, key, callbacks[key])
            target.callbacks.on_notification = self._notified
            return target
        kwargs: dict[str, Any] = {"timeout": self.timeout}
        if self.era != "auto":
            kwargs["era"] = self.era
        if self.headers:
            kwargs["headers"] = dict(self.headers)
        if self.env:
            kwargs["env"] = dict(self.env)
        if self._auth is not None:
            # Tokens come from an httpx.Auth, which only the client's httpx wire carries.
            kwargs["auth"] = self._auth
        elif self.url is not None and self.url.startswith("http://") and http11.available():
            # POSTs ride pooled connections parsed by httptools (httpx's pool costs more per
            # call the more are in flight), and modern calls can take the fast lane on
            # the same pool.
            self._pool = http11.Http11Pool()
            transport = HttpTransport(
                self.url, headers=kwargs.pop("headers", None), pool=self._pool
            )
            self.lane = FastLane.of(transport, self.timeout)
            target = transport
        return Client(target, on_notification=self._notified, **self.fronts.callbacks(), **kwargs)

    async def run(self, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the upstream connected until :meth:`stop` (or cancelled); reconnect or
        restart it with backoff when it fails."""
        delay = 0.5
        started = False
        self._running = True
        try:
            while not self._stopping.is_set():
                try:
                    # (A client that cannot be made, e.g. a header that cannot be sent,
                    # is this attempt's failure.)  Connected and closed in this task with
                    # nothing in between: the client's task groups must be exited from
                    # the scope they were entered in.
                    async with self._make_client() as client:
                        info = client.server_info
                        self.client = client
                        self.error = None
                        self._came_back()
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
                        self._went_down()
                        log.warning("upstream %s: %s", self.name, self.error)
                finally:
                    self.client = None
                    pool, self._pool = self._pool, None
                    self.lane = None
                    if pool is not None:  # (after the client: the lane's and the client's)
                        pool.close()
                if not started:
                    started = True
                    self.first_attempt.set()
                    task_status.started()
                if isinstance(self.target, Client):
                    break  # (a ready-made client connects once)
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
        limit = self.timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            while True:
                while self.busy:
                    await anyio.sleep(0.05)
                await anyio.sleep(grace)
                if not self.busy:
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
            if self.health_interval > 0:
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
        """``resources/subscribe`` (or ``unsubscribe``) of ``uri`` at a legacy upstream."""
        try:
            if wanted:
                await client.subscribe_resource(uri)
            else:
                await client.unsubscribe_resource(uri)
        except ClientError as exc:
            log.info(
                "upstream %s: resources/%ssubscribe %s: %s",
                self.name,
                "" if wanted else "un",
                uri,
                exc,
            )

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
                except wire.ServerError as exc:  # it answered, but will not stream: live without
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
        interval = self.health_interval
        while True:
            await anyio.sleep(interval)
            try:
                await client.ping(timeout=max(interval, 5.0))
            except wire.ServerError:
                continue  # an error answer is still an answer
            except wire.RequestTimeoutError as exc:
                log.warning("upstream %s is slow to answer: %s", self.name, exc)
            except (wire.TransportError, OSError) as exc:
                self._fail(client, f"health check failed: {exc}")
                return

    def mark_dead(self, reason: str) -> None:
        self.error = reason
        self._went_down()
        self._restart.set()

    def _went_down(self) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()

    def _came_back(self) -> None:
        """Log, once, that an upstream found down serves again."""
        if self._down_since is not None:
            outage = time.monotonic() - self._down_since
            self._down_since = None
            log.warning("upstream %s is back after %.0f s", self.name, outage)

    def _fail(self, client: Client, reason: str) -> None:
        """``client`` failed; restart unless it was already replaced."""
        if client is self.client:
            log.warning("upstream %s: %s; reconnecting", self.name, reason)
            self.mark_dead(reason)

    def _notified(self, note: Notification) -> None:
        self._handle_change(note.method, note.params)

    def _handle_change(self, method: str, params: dict[str, Any]) -> None:
        kind = CHANGED.get(method)
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

    #: See :class:`~mcpkit.compose.replicas.ReplicaSet` (``safe`` is its retry flag).
    replicated = False

    async def call(
        self,
        fn: Callable[[Client], Awaitable[T]],
        front: FrontCall | None = None,
        *,
        safe: bool = False,
    ) -> T:
        """Run ``fn(client)``; a transport failure marks the upstream for restart.

        Errors the upstream answered with pass through as they are; failures to reach it
        become :class:`UpstreamUnavailable`; other client-side failures (timeouts, invalid
        answers) an internal error naming the upstream."""
        client = self.client  # (live(), inline: once per forwarded call)
        if client is None:
            raise UpstreamUnavailable(self.name, self.error or "not connected")
        token = self.fronts.enter(front) if front is not None else None
        self.busy += 1
        try:
            return await fn(client)
        except McpError:
            raise
        except Exception as exc:
            error = self.failure(client, exc)
            if error is exc:
                raise
            raise error from None
        finally:
            self.busy -= 1
            if front is not None and token is not None:
                self.fronts.leave(front, token)

    def failure(self, client: Client, exc: Exception) -> BaseException:
        """What a call on ``client`` that raised ``exc`` (not an :class:`McpError`)
        raises instead: a failure to reach the upstream marks it for restart and is
        :class:`UpstreamUnavailable`; a timeout or an answer that could not be used an
        internal error naming the upstream; an OAuth failure of ``[upstream.auth]`` the
        caller's error; anything else ``exc`` itself.  (:meth:`call`'s rule, also for
        the gateway's calls straight onto the fast lane.)"""
        if isinstance(exc, wire.RequestTimeoutError):  # (a TimeoutError: an OSError, not dead)
            return upstream_failed(self.name, "it did not answer in time", exc)
        if isinstance(exc, _UNREACHABLE):
            self._fail(client, str(exc) or type(exc).__name__)
            return UpstreamUnavailable(self.name, str(exc) or type(exc).__name__)
        if isinstance(exc, ClientError):
            return upstream_failed(self.name, "its answer could not be used", exc)
        hook = self._auth_error
        converted = hook(self.name, exc) if hook is not None else None
        return exc if converted is None else converted

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
            with self._shared():  # cached for every caller: never one caller's view
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
