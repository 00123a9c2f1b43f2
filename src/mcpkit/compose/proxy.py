"""``proxy(target)``: an ordinary :class:`~mcpkit.server.Server` that forwards every
request to another MCP server, whatever era each side speaks.

Why here and not ``Server.proxy``: a proxy is a server *and* a client, and ``server/``
may import neither ``client/`` nor the transports (tests/test_architecture.py).  So the
proxy lives in :mod:`mcpkit.compose`, at the host/gateway rank, and returns a plain
``Server`` subclass that mounts, serves and takes middleware like any other.  The gateway
forwards through the same pieces (:mod:`.upstream`, :mod:`.replicas`, :mod:`.lane`).

* One upstream connection per proxy (one stdio process, one legacy session, one HTTP
  connection pool), kept by :class:`~mcpkit.compose.upstream.Upstream`: opened by the
  proxy's lifespan, shared by every front request, health-checked, reconnected (a stdio
  server restarted) with backoff; meanwhile calls fail at once with
  :class:`UpstreamUnavailable` (503).  Mounting a proxy starts it with its parent.
* Replicas: ``proxy(["http://a/mcp", "http://b/mcp"])`` spreads calls round robin over
  the connected replicas and retries a call that is safe to repeat (lists, reads,
  prompts, tools annotated ``idempotentHint``/``readOnlyHint``) on another one.
* Both eras both ways: a modern front on a modern upstream is passed through untouched
  (``inputRequests``/``requestState`` belong to the upstream and flow back and forth),
  over the raw HTTP/1.1 fast lane for an ``http://`` upstream; any other pairing runs the
  call through the client and asks the upstream's input of the front client (see
  :mod:`.bridge`).
* Lists are fetched page by page as the front asks; an upstream's list changes (legacy
  notifications, a modern listen stream) become the proxy's own.
* Resource subscriptions: the upstream is subscribed to (legacy ``resources/subscribe``,
  or the resource set of its listen stream) only for what some front client watches.
* Tasks (the 2026 tasks extension) of a modern upstream, for a modern front: advertised,
  started and followed (``tasks/*``) by pass-through.
* ``Mcp-Param-*`` headers (``x-mcp-header`` arguments) computed for an HTTP upstream.

Not done: tasks across eras.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio

from ..client import Client
from ..protocol.headers import (
    HeaderParam,
    InvalidHeaderAnnotation,
    expected_param_headers,
    header_params,
)
from ..server.context import Context
from ..server.middleware import build_chains
from ..server.mount import strip_server_info
from ..server.server import Server
from ..transports.client_base import ServerError
from ..types.errors import McpError, invalid_params
from ..types.methods import METHODS
from ..types.versions import TASKS_EXTENSION, Era
from .bridge import FrontCall, bridged_call, forwarded_meta, progress_relay
from .lane import MAX_ANSWER_BYTES, ProgressRelay, capped, pass_through
from .replicas import AnyUpstream, make_upstream, retry_safe
from .upstream import UpstreamUnavailable

__all__ = ["ProxyServer", "UpstreamUnavailable", "proxy"]

log = logging.getLogger("mcpkit.compose")

_LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
_KINDS = dict(zip(_LISTS, ("tools", "prompts", "resources", "templates"), strict=True))
#: The calls that name a target and may come back ``input_required`` (the table's ``mrtr``).
_CALLS = tuple(name for name, spec in METHODS.items() if spec.mrtr)
_MODERN_ONLY = ("resultType", "ttlMs", "cacheScope")
#: Options of :class:`ProxyServer` that are its upstream connection's.
_LINK_OPTIONS = ("timeout", "headers", "env", "era", "health_interval", "auth")


class ProxyServer(Server):
    """A server whose every answer comes from one upstream (see :func:`proxy`).

    ``timeout`` (seconds per upstream request), ``headers``, ``env``, ``era``,
    ``health_interval`` (seconds between pings, 0 for none) and ``auth`` (an
    ``httpx.Auth`` for the upstream, e.g. :mod:`mcpkit.auth.client`'s) configure the
    upstream connection.  ``shared_lists``: lists come whole from the connection's cache
    (fetched once for every caller, kept until the upstream's ``ttlMs`` runs out or it
    says the list changed; empty while it is down) instead of page by page from the
    upstream.  The other options are the :class:`~mcpkit.server.Server`'s.

    When the proxy stops (its parent stops, or it is unmounted at run time) the calls in
    flight finish on its upstream first (at most ``timeout``), then it disconnects.

    For an owner that keeps its connections itself (the gateway): ``link`` is a running
    :class:`~mcpkit.compose.upstream.Upstream` (or replica set) to forward through instead
    of a ``target`` (the proxy then neither starts nor stops it, nor relays its changes),
    ``result_cap(name)`` the most bytes an answer about ``name`` may have, and
    ``on_served(proxy_name)`` is called when a call, completion or task request was
    answered."""

    #: What a name clash among mounts calls it (:func:`mcpkit.server.mount.check_names`).
    role = "upstream"

    def __init__(
        self,
        target: Any = None,
        *,
        name: str = "proxy",
        connect_timeout: float = 30.0,
        shared_lists: bool = False,
        link: AnyUpstream | None = None,
        result_cap: Callable[[str], int] | None = None,
        on_served: Callable[[str], None] | None = None,
        **options: Any,
    ) -> None:
        link_options = {k: options.pop(k) for k in _LINK_OPTIONS if k in options}
        self.shared_lists = shared_lists
        super().__init__(name, lifespan=_upstream_lifespan, **options)
        self.connect_timeout = connect_timeout
        self._owns_link = link is None
        self._link_recipe = (target, link_options)
        #: The upstream connection (or replica set) every request goes through.
        self.link: AnyUpstream = link if link is not None else self._new_link()
        self._started = link is not None
        self._cap = result_cap
        self._on_served = on_served
        self.bus.on_interest = self.link.watch
        #: Upstream tool -> its definition (``x-mcp-header`` arguments, annotations).
        self._upstream_tools: dict[str, tuple[tuple[HeaderParam, ...], dict[str, Any]]] = {}
        forwarding = {m: self._list for m in _LISTS}
        forwarding.update({m: self._call for m in _CALLS})
        forwarding["completion/complete"] = self._complete
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            forwarding[method] = self._task
        self._handlers.update(forwarding)
        self._chains = build_chains(self._handlers, self.middleware)

    def _new_link(self) -> AnyUpstream:
        target, link_options = self._link_recipe
        return make_upstream(self.name, target, on_change=self._relay, **link_options)

    def _fresh_link(self) -> AnyUpstream:
        """The link for a lifespan that starts: a new connection when an earlier lifespan
        ran (and retired) the current one, so a proxy serves any number of lifespans in
        turn (a client connecting, leaving and connecting again)."""
        if self.link.first_attempt.is_set():
            self.link = self._new_link()
            self.bus.on_interest = self.link.watch
        return self.link

    @property
    def upstream(self) -> Client | None:
        """The connected upstream client (None while it is down)."""
        return self.link.client

    @property
    def error(self) -> str | None:
        """Why the upstream is not connected (None while it is)."""
        return self.link.error

    # ------------------------------------------------------------------ capabilities
    def capabilities(self, era: Era = "modern") -> dict[str, Any]:
        """What the upstream offers, as this proxy serves it: list changes are relayed,
        resource subscriptions too when the upstream has them, and the tasks extension
        to a modern front from a modern upstream."""
        caps: dict[str, Any] = {"logging": {}}
        theirs = self.link.capabilities
        for key in ("tools", "prompts", "resources"):
            if key in theirs:
                caps[key] = {"listChanged": True}
        if self.link.subscribable() and "resources" in caps:
            caps["resources"]["subscribe"] = True
        if "completions" in theirs:
            caps["completions"] = {}
        client = self.link.client
        if era == "modern" and client is not None and client.era == "modern":
            extensions = theirs.get("extensions")
            if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
                caps["extensions"] = {TASKS_EXTENSION: {}}  # tasks/* are passed through
        if self.mounts:
            from ..server.mount import merge_capabilities

            merge_capabilities(self, caps, era)
        return caps

    def answers_for(self, path: str) -> bool:
        """While the upstream is down every method reaches its handler, which says so
        (503) instead of a misleading "method not found"."""
        if self.link.client is None:
            return True
        return super().answers_for(path)

    # ------------------------------------------------------------------ upstream
    def _relay(self, name: str, kind: str, uri: str | None) -> None:
        """The upstream's changes become the proxy's own."""
        if kind == "resource":
            if uri is not None:
                self.notify_resource_updated(uri)
        elif kind == "all":
            self.notify_tools_changed()
            self.notify_prompts_changed()
            self.notify_resources_changed()
        else:
            self._changed(kind)

    async def client(self) -> Client:
        """The connected upstream client (waits for the first connection)."""
        link = self.link
        if link.client is None:
            if not self._started:
                raise UpstreamUnavailable(
                    self.name,
                    "the proxy is not running (serve it, or `async with proxy.running()`)",
                )
            with anyio.move_on_after(self.connect_timeout):
                await link.first_attempt.wait()
        return link.live()

    async def _upstream(
        self,
        ctx: Context,
        run: Callable[[Client], Awaitable[dict[str, Any]]],
        front: FrontCall | None = None,
        *,
        safe: bool = True,
        shape: bool = True,
    ) -> dict[str, Any]:
        """Run ``run(client)`` on the upstream (another replica's when ``safe`` and one
        fails); client-side failures become the front's errors; the answer ``shape``d
        for the front."""
        await self.client()
        try:
            result: dict[str, Any] = await self.link.call(run, front, safe=safe)
        except ServerError as exc:
            # The upstream's error, as the proxy's own: a ServerError read from stdio has
            # no HTTP status, which an HTTP front needs (it would fail to answer).
            raise McpError(exc.code, exc.message, exc.data) from None
        return self._shape(ctx, strip_server_info(dict(result))) if shape else result

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
        if self.shared_lists:
            return await self._shared_list(ctx)
        cursor = ctx.params.get("cursor")
        params = {"cursor": cursor} if cursor is not None else None
        meta = forwarded_meta(ctx, capabilities=False) or None
        result = await self._upstream(ctx, lambda c: c.request(ctx.method, params, meta=meta))
        if ctx.method == "tools/list":
            self._learn_tools(result.get("tools"))
        return result

    async def _shared_list(self, ctx: Context) -> dict[str, Any]:
        """The whole list from the connection's cache (see ``shared_lists``); an upstream
        that is down or cannot list leaves it empty rather than failing it."""
        kind = _KINDS[ctx.method]
        items: list[dict[str, Any]] = []
        if self.link.client is not None:
            try:
                items = await self.link.listing(kind)
            except McpError as exc:
                log.warning("proxy %s: %s failed: %s", self.name, ctx.method, exc)
        if kind == "tools":
            self._learn_tools(items)
        ttl, scope = self.link.freshness(kind) if items else (0, "public")
        member = "resourceTemplates" if kind == "templates" else kind
        return self._shape(ctx, {member: items, "ttlMs": ttl, "cacheScope": scope})

    async def _complete(self, ctx: Context) -> dict[str, Any]:
        params = {k: v for k, v in ctx.params.items() if k != "_meta"}
        meta = forwarded_meta(ctx, capabilities=False) or None
        result = await self._upstream(ctx, lambda c: c.request(ctx.method, params, meta=meta))
        return self._served(result)

    def _served(self, result: dict[str, Any]) -> dict[str, Any]:
        if self._on_served is not None:
            self._on_served(self.name)
        return result

    async def _tool(self, name: str) -> tuple[tuple[HeaderParam, ...], dict[str, Any]] | None:
        """The upstream's tool ``name``: its ``x-mcp-header`` arguments and definition,
        from its tool list (fetched once if needed)."""
        if name not in self._upstream_tools:
            try:
                self._learn_tools(await self.link.listing("tools"))
            except McpError:
                return None
        return self._upstream_tools.get(name)

    def _learn_tools(self, tools: object) -> None:
        for tool in tools if isinstance(tools, list) else ():
            schema = tool.get("inputSchema") if isinstance(tool, dict) else None
            if isinstance(schema, dict) and isinstance(tool.get("name"), str):
                try:
                    self._upstream_tools[tool["name"]] = (header_params(schema), tool)
                except InvalidHeaderAnnotation:
                    self._upstream_tools.pop(tool["name"], None)

    async def _task(self, ctx: Context) -> dict[str, Any]:
        """``tasks/*`` of a task the (modern) upstream started: passed through."""
        client = await self.client()
        if client.era != "modern":
            raise invalid_params("Unknown task", {"taskId": ctx.params.get("taskId")})
        params = {k: v for k, v in ctx.params.items() if k != "_meta"}
        meta = forwarded_meta(ctx, capabilities=True, tasks=True)
        result = await self._upstream(
            ctx, lambda c: c.request(ctx.method, params, meta=meta), safe=False
        )
        return self._served(result)

    async def _call(self, ctx: Context) -> dict[str, Any]:
        client = await self.client()
        progress = progress_relay(ctx)
        method, params = ctx.method, ctx.params
        target = params.get("uri") if method == "resources/read" else params.get("name")
        tool = None
        if method == "tools/call" and (self.link.url is not None or self.link.replicated):
            tool = await self._tool(str(target))  # (its headers, its retry safety)
        safe = self.link.replicated and retry_safe(method, tool[1] if tool else None)
        limit = self._cap(str(target)) if self._cap is not None else MAX_ANSWER_BYTES
        what = f"{method} {target}"
        if ctx.meta.era == "modern" and client.era == "modern":
            # The same protocol on both sides: the upstream's own MRTR rounds pass through.
            result = await self._pass_through(ctx, tool, progress, safe, limit, what)
            return self._served(result)

        def finish(result: dict[str, Any]) -> dict[str, Any]:
            if self._cap is not None:
                result = capped(result, what, limit)
            return self._shape(ctx, strip_server_info(dict(result)))

        # Otherwise through the client, with the proxy's own sealed MRTR rounds.
        result = await bridged_call(
            self,
            ctx,
            method,
            params,
            lambda fn, front, safe: self._upstream(ctx, fn, front, safe=safe, shape=False),
            binding=f"proxy\0{self.name}\0{method}\0{target}",
            safe=safe,
            finish=finish,
        )
        return self._served(result)

    async def _pass_through(
        self,
        ctx: Context,
        tool: tuple[tuple[HeaderParam, ...], dict[str, Any]] | None,
        progress: ProgressRelay | None,
        safe: bool,
        limit: int,
        what: str,
    ) -> dict[str, Any]:
        """A modern call to a modern upstream, untouched (:func:`.lane.pass_through`); an
        answer over ``limit`` bytes is refused (:class:`~mcpkit.compose.lane.ResultTooLarge`),
        the upstream's errors become the proxy's own (see :meth:`_upstream`)."""
        params = ctx.params
        headers = None
        if tool is not None and tool[0] and self.link.url is not None:
            headers = expected_param_headers(tool[0], params.get("arguments"))
        try:
            result = await pass_through(
                self.link,
                ctx.method,
                params,
                forwarded_meta(ctx, capabilities=True, tasks=True),
                headers=headers,
                progress=progress,
                limit=limit,
                what=what if self._cap is not None else None,
                front=FrontCall(ctx),  # (the upstream's log messages reach the front client)
                safe=safe,
            )
        except ServerError as exc:
            raise McpError(exc.code, exc.message, exc.data) from None
        return self._shape(ctx, result)


@contextlib.asynccontextmanager
async def _upstream_lifespan(server: Any) -> AsyncIterator[None]:
    """Connect the upstream in a task of the proxy's (its client's task groups live
    there) and close it gracefully when the proxy stops."""
    proxy: ProxyServer = server
    if not proxy._owns_link:  # (its owner runs it)
        yield
        return
    link = proxy._fresh_link()

    async def keep() -> None:
        # Shielded: the proxy's task group is cancelled before its lifespan ends, and a
        # client closed under cancellation kills its stdio server only after the grace
        # periods.  ``stop`` ends it instead.
        with anyio.CancelScope(shield=True):
            await link.run()

    proxy._started = True
    proxy.spawn(keep)
    # Serve once the upstream answered (or failed): its capabilities are the proxy's.
    with anyio.move_on_after(proxy.connect_timeout):
        await link.first_attempt.wait()
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await link.retire(grace=0.0)  # calls in flight finish first


def proxy(target: Any, *, name: str | None = None, **options: Any) -> Server:
    """A server forwarding everything to ``target``: a URL (``http://...``), several
    URLs of one server's replicas (``["http://a/mcp", "http://b/mcp"]``: round robin
    with failover), a command line (``"python server.py"`` or an argv list), a
    :class:`~mcpkit.client.Client`, or an ``mcpServers`` dict.  With several
    ``mcpServers`` the result is a server with one proxy mounted per entry, under the
    entry's name (``github_create_issue``).

    ``options`` go to :class:`ProxyServer` (``timeout``, ``headers``, ``auth``,
    ``health_interval``...) and :class:`~mcpkit.server.Server` (``cache_ttl_ms``,
    ``middleware``...).
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
