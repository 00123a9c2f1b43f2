"""``proxy(target)``: an ordinary :class:`~mcpkit.server.Server` that forwards every
request to another MCP server, whatever era each side speaks.

Why here and not ``Server.proxy``: a proxy is a server *and* a client, and ``server/``
may import neither ``client/`` nor the transports (tests/test_architecture.py).  So the
proxy lives in :mod:`mcpkit.compose`, at the host/gateway rank, and returns a plain
``Server`` subclass that mounts, serves and takes middleware like any other.

* One upstream connection per proxy (one stdio process, one legacy session, one HTTP
  connection pool), opened by the proxy's lifespan and shared by every front request;
  mounting a proxy starts it with its parent.
* Both eras both ways: a modern front on a modern upstream is passed through untouched
  (``inputRequests``/``requestState`` belong to the upstream and flow back and forth);
  any other pairing runs the call through the client and asks the upstream's input of
  the front client (see :mod:`.bridge`).
* Lists are fetched page by page as the front asks; an upstream's list changes (legacy
  notifications, a modern listen stream) become the proxy's own.

* A dead upstream (a call fails to reach it) is reconnected, a stdio server restarted,
  with backoff; meanwhile calls fail at once with :class:`UpstreamUnavailable` (503).

* Resource subscriptions: the upstream is subscribed to (legacy ``resources/subscribe``,
  or the resource set of its listen stream) only for what some front client watches.

* Tasks (the 2026 tasks extension) of a modern upstream, for a modern front: advertised,
  started and followed (``tasks/*``) by pass-through.

* ``Mcp-Param-*`` headers (``x-mcp-header`` arguments) computed for an HTTP upstream.

Not done: tasks across eras, the gateway's raw HTTP fast lane.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio

from ..client import Client
from ..client.errors import ClientError
from ..protocol.headers import (
    HeaderParam,
    InvalidHeaderAnnotation,
    expected_param_headers,
    header_params,
)
from ..server import handlers as server_handlers
from ..server.context import Context
from ..server.middleware import build_chains
from ..server.mount import strip_server_info
from ..server.server import Server
from ..transports.client_base import ConnectError, ConnectionClosedError, ServerError
from ..types.errors import INTERNAL_ERROR, McpError, invalid_params
from ..types.methods import METHODS
from ..types.versions import TASKS_EXTENSION, Era
from .bridge import FrontCall, Fronts, forwarded_meta, progress_relay

__all__ = [
    "ProxyServer",
    "UpstreamUnavailable",
    "client_for",
    "legacy_subscription",
    "proxy",
]

log = logging.getLogger("mcpkit.compose")

_LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
#: The calls that name a target and may come back ``input_required`` (the table's ``mrtr``).
_CALLS = tuple(name for name, spec in METHODS.items() if spec.mrtr)
_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
_MODERN_ONLY = ("resultType", "ttlMs", "cacheScope")


class UpstreamUnavailable(McpError):
    """The upstream cannot be reached (HTTP 503 at the front)."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(
            INTERNAL_ERROR,
            f"Upstream {name!r} is unavailable: {detail}",
            {"upstream": name},
            http_status=503,
            http_headers=[(b"retry-after", b"1")],
        )


class ProxyServer(Server):
    """A server whose every answer comes from one upstream (see :func:`proxy`)."""

    def __init__(
        self,
        target: Any,
        *,
        name: str = "proxy",
        connect_timeout: float = 30.0,
        **options: Any,
    ) -> None:
        super().__init__(name, lifespan=_upstream_lifespan, **options)
        self.connect_timeout = connect_timeout
        self.fronts = Fronts(name)
        self._target = target
        #: The connected upstream client while the proxy runs.
        self.upstream: Client | None = None
        self.error: str | None = "not started"
        self._ready: anyio.Event | None = None
        self._stop: anyio.Event | None = None
        self._stopped: anyio.Event | None = None
        #: Set to end the current connection (the proxy stops, or the upstream died).
        self._wake = anyio.Event()
        #: Resource URIs someone downstream watches: subscribed to at the upstream.
        self.watched: set[str] = set()
        self._listen_scope: anyio.CancelScope | None = None
        self._conn_tg: Any = None
        self.bus.on_interest = self._interest
        #: Upstream tool -> its ``x-mcp-header`` arguments (see :meth:`_param_headers`).
        self._header_params: dict[str, tuple[HeaderParam, ...]] = {}
        forwarding = {m: self._list for m in _LISTS}
        forwarding.update({m: self._call for m in _CALLS})
        forwarding["completion/complete"] = self._complete
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            forwarding[method] = self._task
        self._handlers.update(forwarding)
        self._chains = build_chains(self._handlers, self.middleware)

    # ------------------------------------------------------------------ capabilities
    def capabilities(self, era: Era = "modern") -> dict[str, Any]:
        """What the upstream offers, as this proxy serves it: list changes are relayed,
        resource subscriptions and the tasks extension are not."""
        caps: dict[str, Any] = {"logging": {}}
        client = self.upstream
        theirs = dict(client.server_info.capabilities) if client is not None else {}
        for key in ("tools", "prompts", "resources"):
            if key in theirs:
                caps[key] = {"listChanged": True}
        if self._subscribable():
            caps["resources"]["subscribe"] = True
        if "completions" in theirs:
            caps["completions"] = {}
        if era == "modern" and client is not None and client.era == "modern":
            extensions = theirs.get("extensions")
            if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
                caps["extensions"] = {TASKS_EXTENSION: {}}  # tasks/* are passed through
        if self.mounts:
            from ..server.mount import merge_capabilities

            merge_capabilities(self, caps, era)
        return caps

    def _subscribable(self) -> bool:
        client = self.upstream
        caps = client.server_info.capabilities if client is not None else {}
        return bool((caps.get("resources") or {}).get("subscribe"))

    def has_capability(self, path: str) -> bool:
        """While the upstream is down every method reaches its handler, which says so
        (503) instead of a misleading "method not found"."""
        if self.upstream is None:
            return True
        return super().has_capability(path)

    # ------------------------------------------------------------------ upstream
    def _make_client(self) -> Client:
        target = self._target
        if isinstance(target, Client):
            # A client given ready-made: its input requests and notifications come here.
            callbacks = self.fronts.callbacks()
            for key in ("elicitation", "url_elicitation", "sampling", "roots", "on_log"):
                setattr(target.callbacks, key, callbacks[key])
            target.callbacks.on_notification = self._notified
            return target
        return client_for(target, self.fronts.callbacks(), self._notified)

    async def _keep_upstream(self) -> None:
        """Keep the upstream connected until the proxy stops; reconnect (restart a stdio
        server) with backoff when a call finds it dead.  Meanwhile calls fail at once
        with :class:`UpstreamUnavailable`.  A ``Client`` given as the target is used once."""
        ready, stop, stopped = self._ready, self._stop, self._stopped
        assert ready is not None and stop is not None and stopped is not None
        delay = 0.5
        try:
            while not stop.is_set():
                self._wake = anyio.Event()
                try:
                    # Shielded: the proxy's task group is cancelled before its lifespan
                    # ends, and a client closed under cancellation kills its stdio server
                    # only after the grace periods.  ``stop`` (or ``_wake``) ends it instead.
                    with anyio.CancelScope(shield=True):
                        await self._run_client(ready)
                    delay = 0.5
                except Exception as exc:
                    self.error = str(exc) or type(exc).__name__
                    log.warning("proxy %s: upstream failed: %s", self.name, self.error)
                self.upstream = None
                ready.set()
                if isinstance(self._target, Client):
                    break
                with anyio.move_on_after(delay):
                    await stop.wait()
                delay = min(delay * 2, 10.0)
        finally:
            self.upstream = None
            if self.error is None:
                self.error = "stopped"
            ready.set()
            stopped.set()

    async def _run_client(self, ready: anyio.Event) -> None:
        wake = self._wake
        async with self._make_client() as client:
            self.upstream, self.error = client, None
            self.notify_tools_changed()
            self.notify_prompts_changed()
            self.notify_resources_changed()
            ready.set()
            async with anyio.create_task_group() as tg:
                self._conn_tg = tg
                if client.era == "modern":
                    tg.start_soon(self._listen, client)
                elif self._subscribable():
                    for uri in sorted(self.watched):
                        tg.start_soon(self._legacy_subscription, client, uri, True)
                await wake.wait()
                self._conn_tg = None
                tg.cancel_scope.cancel()
            self.upstream = None  # before the client closes: no new call may pick it

    def _dead(self, client: Client, reason: str) -> None:
        """A call found ``client`` dead: reconnect (unless it was already replaced)."""
        if client is self.upstream:
            log.warning("proxy %s: upstream lost (%s); reconnecting", self.name, reason)
            self.error = reason
            self.upstream = None
            self._wake.set()

    async def _listen(self, client: Client) -> None:
        """A modern upstream's changes: one listen stream, reopened when the set of
        watched resources changes."""
        caps = client.server_info.capabilities
        tools, prompts, resources = (
            bool((caps.get(k) or {}).get("listChanged")) for k in ("tools", "prompts", "resources")
        )
        while True:
            uris = sorted(self.watched) if self._subscribable() else []
            if not (tools or prompts or resources or uris):
                return
            scope = self._listen_scope = anyio.CancelScope()
            with scope:
                try:
                    async with client.listen(
                        tools=tools, prompts=prompts, resources=resources, resource_uris=uris
                    ) as sub:
                        async for note in sub:
                            self._notified(note)
                except ClientError as exc:
                    log.info("proxy %s: no listen stream from the upstream: %s", self.name, exc)
                return
            # cancelled by _interest(): listen again with the new resource set

    def _interest(self, uri: str, wanted: bool) -> None:
        """A front client started (stopped) watching ``uri``: subscribe at the upstream."""
        if wanted:
            self.watched.add(uri)
        else:
            self.watched.discard(uri)
        client, tg = self.upstream, self._conn_tg
        if client is None or tg is None or not self._subscribable():
            return  # (re)connecting: the new connection starts from self.watched
        if client.era == "modern":
            if self._listen_scope is not None:
                self._listen_scope.cancel()
        else:
            tg.start_soon(self._legacy_subscription, client, uri, wanted)

    async def _legacy_subscription(self, client: Client, uri: str, wanted: bool) -> None:
        await legacy_subscription(client, uri, wanted, f"proxy {self.name}", log)

    def _notified(self, note: Any) -> None:
        kind = _CHANGED.get(note.method)
        if kind is not None:
            self._changed(kind)
        elif note.method == "notifications/resources/updated":
            uri = note.params.get("uri")
            if isinstance(uri, str):
                self.notify_resource_updated(uri)

    async def client(self) -> Client:
        """The connected upstream client (waits for the first connection)."""
        client = self.upstream
        if client is not None:
            return client
        if self._ready is None:
            raise UpstreamUnavailable(
                self.name, "the proxy is not running (serve it, or `async with proxy.running()`)"
            )
        with anyio.move_on_after(self.connect_timeout):
            await self._ready.wait()
        if self.upstream is None:
            raise UpstreamUnavailable(self.name, self.error or "not connected")
        return self.upstream

    async def _upstream(self, ctx: Context, run: Any) -> dict[str, Any]:
        """Run ``run(client)``; client-side failures become the front's errors."""
        client = await self.client()
        try:
            result: dict[str, Any] = await run(client)
        except ServerError as exc:
            # The upstream's error, as the proxy's own: a ServerError read from stdio has
            # no HTTP status, which an HTTP front needs (it would fail to answer).
            raise McpError(exc.code, exc.message, exc.data) from None
        except McpError:
            raise
        except (ConnectError, ConnectionClosedError, OSError) as exc:
            self._dead(client, str(exc) or type(exc).__name__)
            raise UpstreamUnavailable(self.name, str(exc) or type(exc).__name__) from None
        except ClientError as exc:
            raise UpstreamUnavailable(self.name, str(exc)) from None
        return self._shape(ctx, strip_server_info(dict(result)))

    def _shape(self, ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
        """An upstream answer in the front's era: a legacy front gets no modern fields; a
        modern front gets the required cache hints when a legacy upstream gave none."""
        if ctx.meta.era == "legacy":
            return {k: v for k, v in result.items() if k not in _MODERN_ONLY}
        if (
            (spec := METHODS.get(ctx.method)) is not None
            and spec.cacheable
            and "ttlMs" not in result
            and result.get("resultType", "complete") == "complete"
        ):
            result["ttlMs"] = self.cache_ttl_ms
            result["cacheScope"] = self.cache_scope
        return result

    # ------------------------------------------------------------------ handlers
    async def _list(self, ctx: Context) -> dict[str, Any]:
        cursor = ctx.params.get("cursor")
        params = {"cursor": cursor} if cursor is not None else None
        meta = forwarded_meta(ctx, capabilities=False) or None
        result = await self._upstream(ctx, lambda c: c.request(ctx.method, params, meta=meta))
        if ctx.method == "tools/list":
            self._learn_headers(result.get("tools"))
        return result

    async def _complete(self, ctx: Context) -> dict[str, Any]:
        params = {k: v for k, v in ctx.params.items() if k != "_meta"}
        meta = forwarded_meta(ctx, capabilities=False) or None
        return await self._upstream(ctx, lambda c: c.request(ctx.method, params, meta=meta))

    async def _param_headers(
        self, client: Client, method: str, params: dict[str, Any]
    ) -> dict[str, str] | None:
        """The ``Mcp-Param-*`` headers an HTTP upstream expects with this call (its
        tool's ``x-mcp-header`` arguments), from its tool list (fetched once if needed)."""
        name = params.get("name")
        if method != "tools/call" or client.transport.kind != "http" or not isinstance(name, str):
            return None
        if name not in self._header_params:
            try:
                self._learn_headers(await client.list_tools())
            except ClientError:
                return None
        found = self._header_params.get(name)
        arguments = params.get("arguments")
        return expected_param_headers(found, arguments) if found else None

    def _learn_headers(self, tools: Any) -> None:
        for tool in tools if isinstance(tools, list) else ():
            schema = tool.get("inputSchema") if isinstance(tool, dict) else None
            if isinstance(schema, dict) and isinstance(tool.get("name"), str):
                try:
                    self._header_params[tool["name"]] = header_params(schema)
                except InvalidHeaderAnnotation:
                    self._header_params.pop(tool["name"], None)

    async def _task(self, ctx: Context) -> dict[str, Any]:
        """``tasks/*`` of a task the (modern) upstream started: passed through."""
        client = await self.client()
        if client.era != "modern":
            raise invalid_params("Unknown task", {"taskId": ctx.params.get("taskId")})
        params = {k: v for k, v in ctx.params.items() if k != "_meta"}
        meta = forwarded_meta(ctx, capabilities=True, tasks=True)
        return await self._upstream(ctx, lambda c: c.request(ctx.method, params, meta=meta))

    async def _call(self, ctx: Context) -> dict[str, Any]:
        client = await self.client()
        progress = progress_relay(ctx)
        if ctx.meta.era == "modern" and client.era == "modern":
            # The same protocol on both sides: the upstream's own MRTR rounds pass through.
            params = {k: v for k, v in ctx.params.items() if k != "_meta"}
            passed = forwarded_meta(ctx, capabilities=True, tasks=True)
            headers = await self._param_headers(client, ctx.method, params)
            return await self._upstream(
                ctx,
                lambda c: c.request(
                    ctx.method, params, meta=passed, on_progress=progress, headers=headers
                ),
            )
        method, params = ctx.method, ctx.params
        target = params.get("uri") if method == "resources/read" else params.get("name")
        meta = forwarded_meta(ctx, capabilities=False) or None

        async def once(c: Client) -> dict[str, Any]:
            if method == "tools/call":
                arguments = params.get("arguments")
                return dict(
                    await c.call_tool(str(target), arguments, on_progress=progress, meta=meta)
                )
            if method == "prompts/get":
                return dict(await c.get_prompt(str(target), params.get("arguments"), meta=meta))
            return dict(await c.read_resource(str(target), refresh=True, meta=meta))

        async def run() -> dict[str, Any]:
            front = FrontCall(ctx)
            token = self.fronts.enter(front)
            result: dict[str, Any] | None = None
            try:
                with front.scope:
                    result = await self._upstream(ctx, once)
            finally:
                self.fronts.leave(front, token)
            if front.failure is not None:
                raise front.failure
            if front.need is not None:
                raise front.need
            if result is None:
                raise McpError(INTERNAL_ERROR, f"the upstream call {method} was cancelled")
            return result

        # A modern front on a legacy upstream: the proxy's own sealed MRTR rounds.
        binding = f"proxy\0{self.name}\0{method}\0{target}"
        return await server_handlers._with_input(self, ctx, binding, run)


@contextlib.asynccontextmanager
async def _upstream_lifespan(server: Any) -> AsyncIterator[None]:
    """Connect the upstream in a task of the proxy's (its client's task groups live
    there) and close it gracefully when the proxy stops."""
    proxy: ProxyServer = server
    proxy._ready, proxy._stop, proxy._stopped = anyio.Event(), anyio.Event(), anyio.Event()
    proxy.spawn(proxy._keep_upstream)
    # Serve once the upstream answered (or failed): its capabilities are the proxy's.
    with anyio.move_on_after(proxy.connect_timeout):
        await proxy._ready.wait()
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            proxy._stop.set()
            proxy._wake.set()
            with anyio.move_on_after(15):
                await proxy._stopped.wait()


# ---------------------------------------------------------------------- targets


def client_for(entry: Any, callbacks: Mapping[str, Any], on_notification: Any) -> Client:
    """A :class:`Client` for a URL, a command line (string or argv list) or one
    ``mcpServers`` entry (``{"command", "args", "env"}`` or ``{"url", "headers"}``)."""
    options: dict[str, Any] = {**callbacks, "on_notification": on_notification}
    if isinstance(entry, Mapping):
        if "url" in entry:
            if entry.get("headers"):
                options["headers"] = dict(entry["headers"])
            return Client(str(entry["url"]), **options)
        if "command" in entry:
            argv = [str(entry["command"]), *(str(a) for a in entry.get("args") or ())]
            if entry.get("env"):
                options["env"] = {str(k): str(v) for k, v in entry["env"].items()}
            return Client(argv, **options)
        raise ValueError(f"an mcpServers entry needs 'url' or 'command', not {sorted(entry)}")
    if isinstance(entry, str) or (
        isinstance(entry, Sequence) and all(isinstance(a, str) for a in entry)
    ):
        return Client(entry, **options)
    raise TypeError(f"cannot proxy {type(entry).__name__}: give a URL, a command or a Client")


def proxy(target: Any, *, name: str | None = None, **options: Any) -> Server:
    """A server forwarding everything to ``target``: a URL (``http://...``), a command
    line (``"python server.py"`` or an argv list), a :class:`~mcpkit.client.Client`, or
    an ``mcpServers`` dict.  With several ``mcpServers`` the result is a server with one
    proxy mounted per entry, under the entry's name (``github_create_issue``).

    ``options`` go to :class:`~mcpkit.server.Server` (``cache_ttl_ms``, ``middleware``...).
    """
    if isinstance(target, Mapping) and "mcpServers" in target:
        servers = target["mcpServers"]
        if not isinstance(servers, Mapping) or not servers:
            raise ValueError("mcpServers must name at least one server")
        if len(servers) == 1:
            (key, entry), *_ = servers.items()
            return ProxyServer(entry, name=name or str(key), **options)
        front = Server(name or "proxy", **options)
        for key, entry in servers.items():
            front.mount(ProxyServer(entry, name=str(key)), namespace=str(key))
        return front
    return ProxyServer(target, name=name or "proxy", **options)


async def legacy_subscription(
    client: Client, uri: str, wanted: bool, who: str, logger: logging.Logger
) -> None:
    """``resources/subscribe`` (or ``unsubscribe``) of ``uri`` at a legacy upstream, for a
    proxy or a gateway upstream (``who`` names it in the line a refusal leaves in
    ``logger``, the caller's own)."""
    try:
        if wanted:
            await client.subscribe_resource(uri)
        else:
            await client.unsubscribe_resource(uri)
    except ClientError as exc:
        logger.info("%s: resources/%ssubscribe %s: %s", who, "" if wanted else "un", uri, exc)
