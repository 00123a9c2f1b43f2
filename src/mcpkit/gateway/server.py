"""The gateway's front: an mcpkit :class:`~mcpkit.server.Server` whose handlers proxy to
upstreams, so both protocol eras, listen streams and legacy sessions come for free from
the ordinary transports.

Per request: authorization (first matching rule), then rate limits (counted under the
name from the body, after the transport checked it against ``Mcp-Name``), then routing by
namespace prefix, then audit and metrics.  Era bridging:

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
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import anyio

from ..protocol.headers import expected_param_headers
from ..protocol.negotiation import RequestMeta
from ..protocol.sealing import InvalidState
from ..server.context import Context
from ..server.exchange import Exchange
from ..server.middleware import Middleware
from ..server.middleware.telemetry import Telemetry
from ..server.mrtr import (
    InputRound,
    NeedInput,
    input_required_result,
    opened_payload,
    sealed_payload,
)
from ..server.notify import ChangeEvent
from ..server.server import Server
from ..server.tasks import declares_tasks, tasks_required_error
from ..types.codec import encode
from ..types.errors import (
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    invalid_params,
    method_not_found,
)
from ..types.methods import METHODS
from ..types.versions import META_SERVER_INFO
from . import views
from .audit import AuditLog
from .bridge import (
    FrontCall,
    ProxyTool,
    bridged_meta,
    clean,
    meta_for,
    progress_forwarder,
    strip,
    trace_meta,
)
from .config import GatewayConfig
from .forward import ResultTooLarge
from .metrics import Metrics
from .policy import ANONYMOUS, Authorizer, Principal
from .ratelimit import RateLimiter
from .replicas import AnyUpstream, make_upstream
from .routing import resource_owner

log = logging.getLogger("mcpkit.gateway")

#: Application error codes (outside the JSON-RPC/MCP reserved range).
UNAUTHENTICATED = -31001
FORBIDDEN = -31003
RATE_LIMITED = -31029
TASK_SEPARATOR = "~"


class PolicyError(McpError):
    def __init__(
        self,
        code: int,
        message: str,
        status: int,
        outcome: str,
        data: Any = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(code, message, data, http_status=status, http_headers=headers)
        self.outcome = outcome


class GatewayServer(Server):
    def __init__(self, config: GatewayConfig) -> None:
        super().__init__(config.name, "1.0.0", state=config.state)
        self.config = config
        self.upstreams = [
            make_upstream(u, self._upstream_changed, cache=config.cache) for u in config.upstreams
        ]
        self.authorizer = Authorizer(config.rules, config.default_effect)
        self.limiter = RateLimiter(config.rate_limits, config.state)
        self.audit = AuditLog(config.audit_log)
        self.metrics = Metrics(config.metrics)
        self.private = config.auth.mode != "none"
        self.cache_scope = "private" if self.private else "public"
        self.cache_ttl_ms = 10_000
        self._proxy_tools: dict[str, ProxyTool] = {}
        self._tracing: Telemetry | None = None
        self.bus.on_interest = self._resource_interest

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
            with anyio.move_on_after(max(5.0, upstream.config.timeout_s)):
                await upstream.first_attempt.wait()

    async def stop_upstreams(self) -> None:
        """Close every upstream client gracefully (stdio servers get stdin EOF)."""
        with anyio.CancelScope(shield=True):
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
        for event in ("tools", "prompts", "resources") if kind == "all" else (kind,):
            if event == "resource":
                self.bus.publish(ChangeEvent("resource", uri))
            else:
                self.bus.publish(ChangeEvent(event))

    def _resource_interest(self, uri: str, wanted: bool) -> None:
        """A front client started or stopped watching ``uri`` (listen stream or legacy
        subscription): subscribe at the upstream that serves it, or drop it everywhere."""
        if not wanted:
            for upstream in self.upstreams:
                upstream.watch(uri, False)
        elif self._tg is not None:
            self.spawn(partial(self._watch_upstream, uri))

    async def _watch_upstream(self, uri: str) -> None:
        try:
            upstream = await resource_owner(self.upstreams, uri)
        except McpError:
            log.info("no upstream serves %s: not subscribing", uri)
            return
        if uri in self.bus.watched():  # (still wanted after the lookup)
            upstream.watch(uri, True)

    def _by_prefix(self, name: str) -> tuple[AnyUpstream, str]:
        best: tuple[AnyUpstream, str] | None = None
        for upstream in self.upstreams:
            if name.startswith(upstream.prefix) and (
                best is None or len(upstream.prefix) > len(best[0].prefix)
            ):
                best = (upstream, name[len(upstream.prefix) :])
        if best is None:
            raise invalid_params(f"Unknown name: {name}", {"name": name})
        return best

    # ------------------------------------------------------------------ capabilities
    def capabilities(self, era: str = "modern") -> dict[str, Any]:
        caps: dict[str, Any] = {"logging": {}}
        subscribe = False
        for upstream in self.upstreams:
            theirs = upstream.capabilities
            for key in ("tools", "prompts"):
                if key in theirs:
                    caps[key] = {"listChanged": True}
            if "resources" in theirs:
                caps["resources"] = {"listChanged": True}
                subscribe = subscribe or bool(theirs["resources"].get("subscribe"))
            if "completions" in theirs:
                caps["completions"] = {}
            extensions = theirs.get("extensions") if era == "modern" else None
            if isinstance(extensions, dict) and "io.modelcontextprotocol/tasks" in extensions:
                caps.setdefault("extensions", {})["io.modelcontextprotocol/tasks"] = {}
        if subscribe:
            caps["resources"]["subscribe"] = True
        return caps

    @property
    def tools(self) -> dict[str, Any]:
        """Proxy entries (for the transport's ``Mcp-Param-*`` checks)."""
        return self._proxy_tools

    @tools.setter
    def tools(self, value: Any) -> None:  # Server.__init__ assigns {}
        pass

    # ------------------------------------------------------------------ dispatch
    def add_middleware(self, middleware: Middleware) -> None:
        """The gateway routes requests itself (policy, then upstream), not through the
        server's chains; a :class:`Telemetry` middleware is therefore applied around that
        routing too, so the gateway's SERVER span parents its upstream CLIENT span."""
        super().add_middleware(middleware)
        if isinstance(middleware, Telemetry):
            self._tracing = middleware

    async def dispatch(
        self, message: dict[str, Any], meta: RequestMeta, exchange: Exchange, *,
        session: Any = None, principal: Any = None, local: Any = None,
    ) -> dict[str, Any]:
        if self._tracing is None or local is not None:  # (local: the chain traces it)
            return await self._dispatch(message, meta, exchange, session=session,
                                        principal=principal, local=local)
        ctx = Context(self, meta, message.get("id"), exchange, method=message["method"],
                      params=message.get("params") or {}, session=session,
                      principal=principal)
        return await self._tracing.on_request(
            ctx, lambda _: self._dispatch(message, meta, exchange, session=session,
                                          principal=principal))

    async def _dispatch(
        self, message: dict[str, Any], meta: RequestMeta, exchange: Exchange, *,
        session: Any = None, principal: Any = None, local: Any = None,
    ) -> dict[str, Any]:
        if local is not None:  # a legacy session's own method (initialize, ping, ...)
            return await super().dispatch(
                message, meta, exchange, session=session, principal=principal, local=local
            )
        method: str = message["method"]
        params = message.get("params") or {}
        who: Principal = principal if isinstance(principal, Principal) else ANONYMOUS
        spec = METHODS.get(method)
        name = params.get(spec.name_param) if spec and spec.name_param else None
        name = name if isinstance(name, str) else None
        started = time.perf_counter()
        upstream_name: str | None = None
        outcome = "ok"
        rule: str | None = None  # the deciding [[rule]], for the audit line
        try:
            view = self.config.view(who.view) if who.view is not None else None
            if view is not None and not views.allows(view, method, params):
                raise invalid_params(f"Unknown name: {name}", {"name": name})  # not here
            arguments = params.get("arguments") if method in ("tools/call", "prompts/get") else None
            allowed, reason, rule = self.authorizer.decide(
                who, method, name, arguments if isinstance(arguments, dict) else {}
            )
            if not allowed:
                raise PolicyError(
                    FORBIDDEN,
                    f"Forbidden: {method}{' ' + name if name else ''} "
                    f"is not allowed for {who.name} ({reason})",
                    403,
                    "denied",
                )
            verdict = await self.limiter.check(who.name, method, name)
            if not verdict.allowed:
                raise PolicyError(
                    RATE_LIMITED,
                    f"Rate limit exceeded: rule {verdict.rule!r} ({verdict.limit})",
                    429,
                    f"rate_limited:{verdict.rule}",
                    {
                        "rule": verdict.rule,
                        "limit": verdict.limit,
                        "retryAfter": verdict.retry_after_s,
                    },
                    [(b"retry-after", str(verdict.retry_after_s).encode())],
                )
            ctx = Context(
                self,
                meta,
                message.get("id"),
                exchange,
                method=method,
                params=params,
                session=session,
                principal=who,
            )
            result, upstream_name = await self._route(ctx, method, params)
            if result.get("resultType") == "input_required":
                outcome = "input_required"
        except PolicyError as err:
            outcome = err.outcome
            raise
        except McpError as err:
            outcome = f"error:{err.code}"
            raise
        except NeedInput:
            outcome = "input_required"
            raise
        except Exception as exc:
            outcome = "error:-32603"
            log.exception("gateway error on %s", method)
            raise McpError(-32603, f"Gateway error: {type(exc).__name__}") from exc
        finally:
            seconds = time.perf_counter() - started
            self.audit.record(
                principal=who.name,
                method=method,
                name=name,
                upstream=upstream_name,
                outcome=outcome,
                latency_ms=seconds * 1000,
                **({"rule": rule} if rule is not None else {}),
            )
            self.metrics.observe(method, upstream_name, outcome, seconds)
        if meta.era == "modern":
            result.setdefault("resultType", "complete")
            result.setdefault("_meta", {META_SERVER_INFO: self.info})
        return result

    async def _route(
        self, ctx: Context, method: str, params: dict[str, Any]
    ) -> tuple[dict[str, Any], str | None]:
        if method == "server/discover":
            return await self._handlers["server/discover"](ctx), None
        if method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
            return await self._aggregate(ctx, method), None
        if method in ("tools/call", "prompts/get"):
            upstream, original = self._by_prefix(str(params.get("name", "")))
            return await self._forward(
                ctx, upstream, method, {**params, "name": original}
            ), upstream.name
        if method == "resources/read":
            uri = str(params.get("uri", ""))
            upstream = await resource_owner(self.upstreams, uri, ctx.meta.era)
            return await self._forward(ctx, upstream, method, params), upstream.name
        if method == "completion/complete":
            ref = params.get("ref") or {}
            if ref.get("type") == "ref/prompt":
                upstream, original = self._by_prefix(str(ref.get("name", "")))
                forwarded = {**params, "ref": {**ref, "name": original}}
            else:
                uri = str(ref.get("uri", ""))
                upstream = await resource_owner(self.upstreams, uri, ctx.meta.era)
                forwarded = params
            trace = trace_meta(ctx) or None
            answer = await upstream.call(
                lambda c: c.request(method, clean(forwarded), meta=trace), safe=True
            )
            return strip(answer), upstream.name
        if method in ("tasks/get", "tasks/update", "tasks/cancel"):
            if not declares_tasks(ctx.meta):
                raise tasks_required_error()
            task_id = str(params.get("taskId", ""))
            owner, _, inner = task_id.partition(TASK_SEPARATOR)
            owned = next((u for u in self.upstreams if u.name == owner), None)
            if owned is None or not inner:
                raise invalid_params(f"Unknown task: {task_id}", {"taskId": task_id})
            upstream = owned
            answer = await upstream.call(
                lambda c: c.request(method, {**clean(params), "taskId": inner}, meta=meta_for(ctx))
            )
            return self._retag(upstream, strip(answer)), upstream.name
        raise method_not_found(method)

    async def _aggregate(self, ctx: Context, method: str) -> dict[str, Any]:
        kind = {
            "tools/list": "tools",
            "prompts/list": "prompts",
            "resources/list": "resources",
            "resources/templates/list": "templates",
        }[method]
        member = {"templates": "resourceTemplates"}.get(kind, kind)
        items: list[dict[str, Any]] = []
        ttl_ms = self.cache_ttl_ms if self.config.cache else 0
        scope = self.cache_scope
        who = ctx.principal
        view = self.config.view(who.view) if isinstance(who, Principal) and who.view else None
        for upstream in self.upstreams:
            if upstream.client is None:
                continue
            try:
                listing = await upstream.listing(kind)
            except McpError as exc:
                log.warning("upstream %s: %s failed: %s", upstream.name, method, exc)
                continue
            # The merged list is stale as soon as any part of it is; private if any part is.
            remaining, their_scope = upstream.freshness(kind)
            ttl_ms = min(ttl_ms, remaining)
            if their_scope == "private":
                scope = "private"
            for item in listing:
                if kind in ("tools", "prompts"):
                    item = {**item, "name": upstream.prefix + str(item.get("name", ""))}
                    call = "tools/call" if kind == "tools" else "prompts/get"
                    if not self.authorizer.decide(ctx.principal, call, item["name"]).allowed:
                        continue
                    if kind == "tools":
                        self._proxy_tools[item["name"]] = ProxyTool(item)
                else:  # resources by URI, templates by their uriTemplate: same rules
                    uri = item.get("uri") if kind == "resources" else item.get("uriTemplate")
                    if not self.authorizer.decide(
                        ctx.principal, "resources/read", str(uri)
                    ).allowed:
                        continue
                if view is not None and not views.keep(view, kind, item):
                    continue
                items.append(item)
        result: dict[str, Any] = {member: items}
        if ctx.meta.era == "modern":
            result["ttlMs"] = ttl_ms
            result["cacheScope"] = scope
        return result

    async def _forward(
        self, ctx: Context, upstream: AnyUpstream, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        target = params.get("uri") if method == "resources/read" else params.get("name")
        front_name = str(target) if method == "resources/read" else upstream.prefix + str(target)
        limit = self.config.result_cap(front_name)
        what = f"{method} {front_name}"
        safe = upstream.replicated and await self._retry_safe(upstream, method, params)
        client = upstream.live()
        progress = progress_forwarder(ctx)
        if ctx.meta.era == "modern" and client.era == "modern":
            headers = None
            if method == "tools/call":
                tool = await self._proxy_tool(upstream, str(params.get("name", "")))
                if tool is not None and tool.header_params:
                    headers = expected_param_headers(tool.header_params, params.get("arguments"))
            lane = upstream.lane
            if lane is not None:
                try:
                    answer = await upstream.call(
                        lambda c: lane.request(
                            c,
                            method,
                            clean(params),
                            meta_for(ctx),
                            headers=headers,
                            progress=progress,
                            limit=limit,
                        ),
                        FrontCall(ctx),
                        safe=safe,
                    )
                    return self._retag(upstream, strip(answer))
                except McpError as exc:
                    if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                        raise
                    # the client path negotiates another version and retries
            answer = await upstream.call(
                lambda c: c.request(
                    method,
                    clean(params),
                    meta=meta_for(ctx),
                    headers=headers,
                    on_progress=progress,
                ),
                FrontCall(ctx),
                safe=safe,
            )
            return self._retag(upstream, strip(_capped(answer, what, limit)))
        front = FrontCall(ctx)
        result: dict[str, Any] | None = None
        rounds = self._open_rounds(ctx, upstream, method, params)
        meta = bridged_meta(ctx)

        async def run(c: Any) -> dict[str, Any]:
            arguments = params.get("arguments")
            if method == "tools/call":
                return dict(
                    await c.call_tool(params["name"], arguments, on_progress=progress, meta=meta)
                )
            if method == "prompts/get":
                return dict(await c.get_prompt(params["name"], arguments, meta=meta))
            return dict(await c.read_resource(params["uri"], refresh=True, meta=meta))

        with anyio.CancelScope() as scope:
            front.scope = scope
            result = await upstream.call(run, front, safe=safe)
        if front.failure is not None:
            raise front.failure
        if front.need is not None:
            if rounds is None:
                raise front.need
            return self._input_required(front.need, *rounds)
        if result is None:  # cancelled for another reason
            raise McpError(-32603, f"upstream {upstream.name} call was cancelled")
        return strip(_capped(result, what, limit))

    async def _retry_safe(self, upstream: AnyUpstream, method: str, params: dict[str, Any]) -> bool:
        """Whether a replica failure mid-call may be retried on another replica: reads,
        and tools that say repeating them is harmless (idempotent or read-only)."""
        if method != "tools/call":
            return True  # resources/read, prompts/get
        tool = await self._proxy_tool(upstream, str(params.get("name", "")))
        notes = tool.wire.get("annotations") if tool is not None else None
        if not isinstance(notes, dict):
            return False
        return notes.get("idempotentHint") is True or notes.get("readOnlyHint") is True

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

    def _open_rounds(
        self, ctx: Context, upstream: AnyUpstream, method: str, params: dict[str, Any]
    ) -> tuple[str, dict[str, Any]] | None:
        """A modern front client on a bridged call: the answers it gave so far.

        The gateway asks the front client's input itself (the upstream is legacy, or the
        front is), so ``inputResponses``/``requestState`` are the gateway's, not the
        upstream's: answers of earlier rounds ride in a ``requestState`` sealed with the
        gateway's keys and bound to method, upstream, name and principal; the upstream call
        is replayed with them (its input requests are answered from them in order)."""
        if ctx.meta.era != "modern":
            return None
        target = params.get("name") if method != "resources/read" else params.get("uri")
        principal = "" if ctx.principal is None else str(ctx.principal)
        binding = "\0".join(("gateway", method, upstream.name, str(target), principal))
        responses: dict[str, Any] = {}
        token = params.get("requestState")
        if token is not None:
            try:
                opened = opened_payload(self.keyring.open(token, binding))
            except InvalidState as exc:
                raise invalid_params(f"Invalid requestState: {exc}") from None
            responses.update(opened.get("r") or {})
        if "inputResponses" in params:
            given = params["inputResponses"]
            if not isinstance(given, dict):
                raise invalid_params("inputResponses must be an object")
            responses.update(given)
        ctx._round = InputRound(responses=responses)
        return binding, responses

    def _input_required(
        self, need: NeedInput, binding: str, responses: dict[str, Any]
    ) -> dict[str, Any]:
        sealed = self.keyring.seal(sealed_payload({"r": responses}), binding)
        return input_required_result(need.requests, sealed)

    def _retag(self, upstream: AnyUpstream, result: dict[str, Any]) -> dict[str, Any]:
        """Task ids name their upstream so tasks/* can be routed back."""
        task_id = result.get("taskId")
        if (
            isinstance(task_id, str)
            and result.get("resultType") in ("task", "complete")
            and not task_id.startswith(upstream.name + TASK_SEPARATOR)
        ):
            result["taskId"] = f"{upstream.name}{TASK_SEPARATOR}{task_id}"
        return result


def _capped(result: dict[str, Any], what: str, limit: int) -> dict[str, Any]:
    """The answer-size cap on the paths that hand over a parsed result (client, bridged,
    stdio): measured as the JSON it is re-sent as.  The fast lane stops reading at the
    cap itself, so its answers are already within it."""
    size = len(encode(result))
    if size > limit:
        raise ResultTooLarge(what, limit, size)
    return result
