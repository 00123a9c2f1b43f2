"""The gateway's front: an mcpkit :class:`~mcpkit.server.Server` whose handlers proxy to
upstreams, so both protocol eras, listen streams and legacy sessions come for free from
the ordinary transports.

Every request takes the server's one dispatch path.  The routed methods (``ROUTED``) are
handlers wrapped in the gateway's policy middleware (:mod:`.middleware`: audit and
metrics, then authorization, then rate limits), then its guardrails, and are answered
through :class:`Upstreams`: a server with one :class:`~mcpkit.compose.ProxyServer` per
upstream, mounted under its prefix with its URIs kept, so the mounts route by prefix, by
the upstream listing a name, by the upstream serving a URI.  Era bridging (the proxy's,
:mod:`mcpkit.compose.bridge`):

* modern client, modern upstream: ``tools/call``/``prompts/get``/``resources/read`` are
  passed through untouched (``inputRequests``, ``requestState`` and task results flow
  both ways), with the front client's own capabilities;
* anything else: the upstream call runs through the pooled client, and the upstream's
  input requests (MRTR rounds or legacy server->client requests) are asked of the front
  client with ``ctx.elicit``/``sample``/``list_roots`` — a legacy front client gets a real
  request, a modern one an ``InputRequiredResult`` (the gateway replays the call with the
  answers on the retry, like any mcpkit handler).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import TYPE_CHECKING, Any, cast

import anyio

from ..compose.bridge import TRACE_KEYS
from ..compose.proxy import ProxyServer
from ..compose.replicas import AnyUpstream
from ..compose.upstream import Upstream
from ..protocol.headers import expected_param_headers
from ..runtime.changes import ChangeEvent
from ..server.context import Context
from ..server.middleware import CallNext, build_chains, wrap
from ..server.middleware.ratelimit import RateLimit
from ..server.mount import TASK_SEPARATOR, check_names, merge_capabilities
from ..server.server import Server
from ..server.tasks import declares_tasks, tasks_required_error
from ..server.uri_owners import resettle
from ..transports.client_base import ServerError
from ..types.errors import UNSUPPORTED_PROTOCOL_VERSION, McpError, invalid_params
from ..types.versions import META_CLIENT_CAPABILITIES, TASKS_EXTENSION, Era
from . import custom, legacy_tasks, views
from .audit import AuditLog
from .auth import GatewayAuthenticator
from .binding import Bindings, handles_in, result_handles
from .config import GatewayConfig
from .connect import with_connect_rounds
from .credentials import acting_call, acting_for, connect
from .metrics import Metrics
from .middleware import admit_listen, policy, served_by
from .policy import Authorizer, Caller
from .routing import ProxyTool, name_owner

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

log = logging.getLogger("mcpkit.gateway")

#: What the gateway routes to its upstreams (everything else is the server's own).
ROUTED = (
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "tools/call",
    "prompts/get",
    "resources/read",
    "completion/complete",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "tasks/result",
    "tasks/list",  # (2025-11-25 only: the caller's own, see .legacy_tasks)
)

#: The methods whose answers may hand a caller something of its own (a task id, a
#: handle, the request state of an input request): see :mod:`.binding`.
BOUND = frozenset({"tools/call", "prompts/get", "resources/read"})

#: The list methods and the kinds of what they list.
LIST_KINDS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "templates",
}


class Upstreams(Server):
    """The gateway's upstreams as one server: a :class:`~mcpkit.compose.ProxyServer` per
    ``[[upstream]]`` over its connection, mounted under its ``prefix`` with its resource
    URIs kept (:meth:`~mcpkit.server.Server.mount`).  The gateway answers its routed
    methods through it, inside its policy."""

    def __init__(self, gateway: GatewayServer) -> None:
        config = gateway.config
        super().__init__(f"{config.name}-upstreams", "1.0.0", state=config.state)
        self.gateway = gateway
        self.page_size = 2**31 - 1  # (the merged lists in one page, as the gateway gives them)
        self.cache_ttl_ms = 10_000 if config.cache else 0
        self.cache_scope = gateway.cache_scope

    def add(self, upstream: AnyUpstream) -> None:
        """Mount a proxy over ``upstream`` (its connection is the gateway's)."""
        gateway = self.gateway
        prefix = upstream.prefix
        proxy = ProxyServer(
            name=upstream.name,
            link=upstream,
            shared_lists=True,
            result_cap=lambda name: gateway.config.result_cap(prefix + name),
            on_served=served_by,
            state=gateway.config.state,
        )
        proxy.cache_ttl_ms, proxy.cache_scope = self.cache_ttl_ms, self.cache_scope
        self.mount(proxy, namespace=upstream.name, prefix=prefix, keep_uris=True)

    def answers_for(self, path: str) -> bool:
        """Every method reaches the mounts: an upstream that is down or lacks a kind
        leaves its part out (see :meth:`GatewayServer.answers_for`)."""
        return True


class GatewayServer(Server):
    """The gateway as an MCP server: its handlers authorize, rate-limit, route to an upstream
    and audit, so every transport and both eras serve it like any other server."""

    calls_wait = True  # (every call is forwarded: see Server.calls_wait)

    def __init__(self, config: GatewayConfig) -> None:
        super().__init__(config.name, "1.0.0", state=config.state)
        self.config = config
        self.upstreams = [
            connect(u, self._upstream_changed, cache=config.cache) for u in config.upstreams
        ]
        self.authorizer = Authorizer(config.rules, config.default_effect)
        self.limiter = rate_limiter(config)
        self.audit = AuditLog(config.audit_log)
        self.metrics = Metrics(config.metrics)
        self.private = config.auth.mode != "none"
        self.cache_scope = "private" if self.private else "public"
        self.cache_ttl_ms = 10_000
        #: The front's authenticator when it has ``[auth.tool_scopes]`` (checked at the
        #: policy point); None without, or when served without an HTTP front (stdio).
        self.authenticator: GatewayAuthenticator | None = None
        self._proxy_tools: dict[str, ProxyTool] = {}
        #: What the HTTP transport reads of a called tool (its ``Mcp-Param-*`` headers,
        #: that it waits on the network): the upstreams' tools as the front names them.
        self.tools = cast("dict[str, Any]", self._proxy_tools)
        #: The upstreams composed: one mounted proxy each (see :class:`Upstreams`).
        self.composed = Upstreams(self)
        self._composed_stop = anyio.Event()
        self._composed_started = False
        self._composed_done = anyio.Event()
        self.bus.on_interest = self._resource_interest
        # The routed methods run the gateway's policy (audit, access, limits) and then the
        # routing; middleware the operator adds (telemetry...) wraps all of it.
        discover = self._handlers["server/discover"]
        layers = policy(self)
        for method in ROUTED:
            route = discover if method == "server/discover" else self._routed
            self._handlers[method] = wrap(route, method, layers)
        self._chains = build_chains(self._handlers, self.middleware)
        # The upstreams' custom methods its file names (see .custom).
        custom.install(self)
        self._bindings: Bindings | None = None

    def add_route(self, method: str, handler: CallNext) -> None:
        """Answer ``method`` with ``handler`` (already inside its policy layers), under the
        operator's middleware: the forwarded custom methods (:mod:`.custom`)."""
        self._handlers[method] = handler
        self._chains = build_chains(self._handlers, self.middleware)

    def drop_routes(self, methods: Iterable[str]) -> None:
        """Stop answering ``methods`` (forwarded custom methods a reload no longer names)."""
        for method in methods:
            self._handlers.pop(method, None)
        self._chains = build_chains(self._handlers, self.middleware)

    @property
    def bindings(self) -> Bindings:
        """Task ids and handles bound to their callers (:mod:`.binding`); made on first
        use, when the keyring and the state backend are the running server's."""
        if self._bindings is None:
            self._bindings = Bindings(self.keyring, self.state)
        return self._bindings

    # ------------------------------------------------------------------ upstreams
    async def start_upstreams(self) -> None:
        """Connect every upstream (in the server's background task group) and wait, for
        each at most its timeout, until its first attempt succeeded or failed."""
        tg = self._tg
        if tg is None:
            raise RuntimeError("start the gateway inside `async with gateway.running()`")
        for upstream in self.upstreams:  # all at once; each keeps retrying on its own
            tg.start_soon(upstream.run)
        for upstream in self.upstreams:
            # Serve without an upstream that is slow to come up (it joins when it does),
            # rather than delaying the others or giving up on it.
            with anyio.move_on_after(max(5.0, upstream.timeout)):
                await upstream.first_attempt.wait()
        # Two upstreams offering one name (several without a prefix...): refuse to start.
        await self.check_names(self.upstreams)
        await tg.start(self._run_composed)

    async def check_names(self, upstreams: list[AnyUpstream]) -> None:
        """Refuse (:class:`~mcpkit.server.mount.NameClash`, naming both) a set of upstreams
        in which two offer one front name, when several share the front unprefixed
        (``prefix = ""``): distinct prefixes keep tool and prompt names apart, and a
        resource URI there goes to the first upstream listing it.  The check of
        :func:`mcpkit.server.mount.check_names`, on a composition of ``upstreams``."""
        if len(upstreams) < 2 or all(u.prefix for u in upstreams):
            return
        scratch = Upstreams(self)  # (not running: it starts nothing)
        for upstream in upstreams:
            scratch.add(upstream)
        await check_names(scratch)

    async def _run_composed(
        self, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the composition for as long as the gateway serves, its proxies mounted once
        it runs (their connections are the gateway's, started and checked above)."""
        self._composed_started = True
        try:
            with anyio.CancelScope(shield=True):  # ended by stop_upstreams, not cancelled
                async with self.composed.running():
                    for upstream in self.upstreams:
                        self.composed.add(upstream)
                    task_status.started()
                    await self._composed_stop.wait()
        finally:
            self._composed_done.set()

    async def stop_upstreams(self) -> None:
        """Close every upstream client gracefully (stdio servers get stdin EOF)."""
        with anyio.CancelScope(shield=True):
            self._composed_stop.set()
            if self._composed_started:
                await self._composed_done.wait()
            async with anyio.create_task_group() as tg:
                for upstream in self.upstreams:
                    tg.start_soon(upstream.stop)

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[GatewayServer]:
        """Run the gateway (lifespan, background work) with its upstreams connected."""
        async with self.running():
            await self.start_upstreams()
            try:
                yield self
            finally:
                await self.stop_upstreams()

    def _upstream_changed(self, upstream: str, kind: str, uri: str | None) -> None:
        if kind in ("tools", "all"):
            self._proxy_tools.clear()
        if kind in ("tools", "resources", "all"):  # (tools name ui:// views)
            resettle(self.composed, upstream)  # its URIs claimed again: first owner keeps
        for event in ("tools", "prompts", "resources") if kind == "all" else (kind,):
            if event == "resource":
                self.bus.publish(ChangeEvent("resource", uri))
            else:
                self.bus.publish(ChangeEvent(event))

    async def admit_listen(self, resources: Iterable[str], principal: object) -> None:
        """A listen stream's resource subscriptions pass the policy of a read of each
        (:func:`.middleware.admit_listen`): raises the refusal."""
        await admit_listen(self, principal, resources)

    def _resource_interest(self, uri: str, wanted: bool) -> None:
        """A front client started or stopped watching ``uri`` (listen stream or legacy
        subscription): the composition watches it at the upstream that serves it."""
        self.composed.bus.want((uri,), wanted)

    # ------------------------------------------------------------------ capabilities
    def capabilities(self, era: Era = "modern") -> dict[str, Any]:
        """What some upstream offers, the front offers (the mounted proxies' merge)."""
        caps = merge_capabilities(self.composed, {"logging": {}}, era)
        if era == "legacy" and "tools" in caps:  # (tasks of the upstreams' tools)
            caps["tasks"] = legacy_tasks.CAPABILITY
        forwarded = custom.declared_extensions(self) if era == "modern" else None
        if forwarded:
            caps["extensions"] = {**(caps.get("extensions") or {}), **forwarded}
        return caps

    def answers_for(self, path: str) -> bool:
        """Every routed method reaches the router, which answers for what the upstreams
        offer now: an upstream that is down leaves its part of a list out, it does not
        turn the method into "method not found"."""
        return True

    # ------------------------------------------------------------------ routing
    async def _composed_route(self, ctx: Context) -> dict[str, Any]:
        guards = self.config.guardrails  # read per request: a reload swaps them
        who = ctx.principal
        subject = acting_for.set(  # (for [upstream.auth] token_exchange)
            who.subject_token if isinstance(who, Caller) else None
        )
        call = acting_call.set(ctx)  # (for [upstream.auth] per_user)
        try:
            # With guardrails, the route reads ctx.params as they left them.
            route = wrap(self._route, ctx.method, guards) if guards else self._route
            if self.config.per_user:  # (its connect rounds: see .connect)
                return await with_connect_rounds(ctx, route)
            return await route(ctx)
        finally:
            acting_call.reset(call)
            acting_for.reset(subject)

    async def _route(self, ctx: Context) -> dict[str, Any]:
        """Answer through the composition (the mounts route by prefix, by the upstream
        listing a name, by the upstream serving a URI, by a task's upstream); lists are
        then cut to what this caller may see."""
        method = ctx.method
        if legacy_tasks.applies(ctx):  # (a 2025-11-25 caller's task: see .legacy_tasks)
            return await legacy_tasks.route(self, ctx)
        if method.startswith("tasks/") and not declares_tasks(ctx.meta):
            raise tasks_required_error()
        name = ctx.params.get("name")
        if method == "tools/call" and isinstance(name, str) and name not in self._proxy_tools:
            # Called without a listing (or after a list change): the transport checks the
            # next call's Mcp-Param-* headers against the tool's definition, learnt here.
            with contextlib.suppress(McpError):
                await self.tool_definition(name)
        if method.startswith("tasks/"):
            return await self._task_method(ctx)
        if method in BOUND:
            return await self._bound_call(ctx)
        # The composition's handler for the method, on this request's context: its mounts
        # need nothing of a dispatch of their own (each proxy gets one).
        result = await self.composed._chains[method](ctx)
        return self._visible(ctx, method, result) if method in LIST_KINDS else result

    async def _bound_call(self, ctx: Context) -> dict[str, Any]:
        """A forwarded call, prompt or read with the caller's bindings
        (:meth:`.Bindings.call`)."""
        handler = self.composed._chains[ctx.method]

        async def forward(params: dict[str, Any]) -> dict[str, Any]:
            ctx.params = params
            return await handler(ctx)

        return await self.bindings.call(ctx.principal, ctx.params, forward)

    async def _task_method(self, ctx: Context) -> dict[str, Any]:
        """``tasks/*`` on a front task id: only the caller who got it may name it; anyone
        else is answered as for an id that does not exist (see :mod:`.binding`)."""
        front = ctx.params.get("taskId")
        task_id = self.bindings.open_task(ctx.principal, front)
        assert isinstance(front, str)  # (open_task accepted it)
        ctx.params = {**ctx.params, "taskId": task_id}
        try:
            result = await self.composed._chains[ctx.method](ctx)
        except McpError as exc:
            raise self.bindings.unknown_as_front(front, exc) from None
        finally:
            ctx.params = {**ctx.params, "taskId": front}
        return self.bindings.answered_as_front(front, result)

    def _routed(self, ctx: Context) -> Awaitable[dict[str, Any]]:
        """The routed methods' handler (inside the policy point), returning the coroutine
        that answers: a plain forwarded call onto its upstream's fast lane
        (:meth:`_lane_call`), anything else through the composition (:meth:`_route`).

        A plain forwarded call is a ``tools/call`` without guardrails (whose checks and
        rewrites run around the composition's routing), of 2026-07-28 in its plainest
        shape (its name, arguments as an object naming no handle, and ``_meta``; no task,
        progress token or log level, whose notifications belong to the front request),
        of a tool the gateway has listed, whose name fits exactly one upstream's prefix,
        an ``http://`` upstream speaking 2026-07-28 over its fast lane, untraced."""
        config = self.config
        params = ctx.params
        name = params.get("name")
        if type(name) is not str or ctx.method != "tools/call" or config.guardrails:
            return self._composed_route(ctx)
        tool = self._proxy_tools.get(name)
        if tool is None:
            return self._composed_route(ctx)
        meta = ctx.meta
        arguments = params.get("arguments", _NO_ARGUMENTS)
        extensions = meta.client_capabilities.get("extensions")
        if (
            not config.direct_calls
            or meta.era != "modern"
            or meta.progress_token is not None
            or meta.log_level is not None
            or not _PLAIN_PARAMS.issuperset(params)
            or type(arguments) is not dict
            or (arguments and handles_in(arguments))  # (Bindings.call swaps handles)
            or (type(extensions) is dict and TASKS_EXTENSION in extensions)
        ):
            return self._composed_route(ctx)
        upstream = None
        for each in self.upstreams:
            if not each.prefix or name.startswith(each.prefix):
                if upstream is not None:
                    return self._composed_route(ctx)  # several fit: the composition decides
                upstream = each
        if type(upstream) is not Upstream and not isinstance(upstream, Upstream):
            return self._composed_route(ctx)  # replicas
        client = upstream.client
        if upstream.lane is None or client is None:
            return self._composed_route(ctx)  # https://, stdio, openapi, oauth, trio, down
        session = client.session
        if session.rules is None or session.rules.name != "modern" or session.traced:
            return self._composed_route(ctx)
        return self._lane_call(ctx, (upstream, name[len(upstream.prefix) :], tool))

    async def _lane_call(self, ctx: Context, route: _LaneRoute) -> dict[str, Any]:
        """A plain forwarded call (:meth:`_routed`) straight onto its upstream's fast
        lane, in one coroutine: what the composition would do for it (the answer-size
        cap, the upstream's timeout and failures (:meth:`.Upstream.failure`),
        ``serverInfo`` stripped, task ids retagged, the upstream's errors as the
        gateway's own, the answer made the caller's), without a dispatch of the mounted
        proxy.  The policy point ran before, in dispatch."""
        upstream, original, tool = route
        params = ctx.params
        name = params["name"]
        metrics = self.metrics
        if metrics.enabled:
            metrics.direct_calls += 1
        wire: dict[str, Any] = {"name": original}
        if "arguments" in params:
            wire["arguments"] = params["arguments"]
        front = params.get("_meta")
        passed: dict[str, Any] = {}
        if type(front) is dict and len(front) > 2:  # (more than the version and client info)
            passed.update({k: v for k in TRACE_KEYS if isinstance(v := front.get(k), str)})
        passed[META_CLIENT_CAPABILITIES] = ctx.meta.client_capabilities
        config = self.config
        lane, client = upstream.lane, upstream.client
        assert lane is not None and client is not None  # (_routed: nothing awaited since)
        upstream.busy += 1
        try:
            answer = await lane.request_bare(
                client,
                wire,
                passed,
                param_headers(tool, params) if tool.header_params else None,
                config.result_cap(name) if config.result_caps else config.max_result_bytes,
            )
        except McpError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:  # the client path negotiates
                return await self._composed_route(ctx)
            if isinstance(exc, ServerError):
                raise McpError(exc.code, exc.message, exc.data) from None
            raise
        except Exception as exc:
            error = upstream.failure(client, exc)
            if error is exc:
                raise
            raise error from None
        finally:
            upstream.busy -= 1
        served_by(upstream.name)
        if "taskId" in answer:
            answer = self.retag(upstream, answer)
        bindings = self._bindings or self.bindings
        if result_handles(answer):
            await bindings.record_handles(ctx.principal, answer)
        if "taskId" in answer or "requestState" in answer:
            return bindings.sealed(ctx.principal, answer)
        return answer

    def _visible(self, ctx: Context, method: str, result: dict[str, Any]) -> dict[str, Any]:
        """A merged list as this caller may see it: what the rules allow and its virtual
        server shows; the tools are remembered for the transport and the lane shortcut."""
        kind = LIST_KINDS[method]
        member = "resourceTemplates" if kind == "templates" else kind
        who = ctx.principal
        view = self.config.view(who.view) if isinstance(who, Caller) and who.view else None
        call = {"tools": "tools/call", "prompts": "prompts/get"}.get(kind, "resources/read")
        key = {"resources": "uri", "templates": "uriTemplate"}.get(kind, "name")
        items = []
        for item in result.get(member) or ():
            if not self.authorizer.decide(who, call, str(item.get(key))).allowed:
                continue
            if kind == "tools":
                self._proxy_tools[item["name"]] = ProxyTool(item)
            if view is None or views.keep(view, kind, item):
                items.append(item)
        return {**result, member: items}

    async def tool_definition(self, name: str) -> dict[str, Any] | None:
        """The upstream's definition of the (namespaced) tool ``name``, for guardrails."""
        found = await name_owner(self.upstreams, name)
        if found is None:
            raise invalid_params(f"Unknown name: {name}", {"name": name})
        tool = await self._proxy_tool(*found)
        return None if tool is None else tool.wire

    async def _proxy_tool(self, upstream: AnyUpstream, original: str) -> ProxyTool | None:
        """The upstream's definition of a tool (for its ``x-mcp-header`` parameters), also
        when the front client called it without listing first, or after a list change."""
        name = upstream.prefix + original
        tool = self._proxy_tools.get(name)
        if tool is None:
            try:
                listing = await upstream.listing("tools")
            except McpError:
                return None
            wire = next((t for t in listing if t.get("name") == original), None)
            if wire is not None:
                tool = self._proxy_tools[name] = ProxyTool({**wire, "name": name})
        return tool

    def retag(self, upstream: AnyUpstream, result: dict[str, Any]) -> dict[str, Any]:
        """Task ids name their upstream so tasks/* can be routed back (the lane shortcut's
        answers: a mounted proxy's are retagged by the mount)."""
        task_id = result.get("taskId")
        if (
            isinstance(task_id, str)
            and result.get("resultType") in ("task", "complete")
            and not task_id.startswith(upstream.name + TASK_SEPARATOR)
        ):
            result["taskId"] = f"{upstream.name}{TASK_SEPARATOR}{task_id}"
        return result


#: What a plain forwarded call's params hold (:meth:`GatewayServer._routed`); any other
#: member (``task``, ``requestState``, ``inputResponses``...) takes the composition.
_PLAIN_PARAMS = frozenset({"name", "arguments", "_meta"})
_NO_ARGUMENTS: dict[str, Any] = {}
_LaneRoute = tuple[Upstream, str, ProxyTool]


def rate_limiter(config: GatewayConfig) -> RateLimit:
    """``[[rate_limit]]`` as the server's one limiter, its counts in the gateway's Redis
    state (shared by every gateway process) or in memory."""
    shared = config.state.startswith(("redis://", "rediss://"))
    url = config.state if shared else "memory://"
    return RateLimit(*config.rate_limits, storage_url=url, key_prefix="mcpkit-gw")


def param_headers(tool: ProxyTool | None, params: dict[str, Any]) -> dict[str, str] | None:
    """The ``Mcp-Param-*`` headers the upstream's tool declares, for these arguments."""
    if tool is None or not tool.header_params:
        return None
    return expected_param_headers(tool.header_params, params.get("arguments"))
