"""The gateway's direct path: a plain 2026-07-28 ``tools/call`` answered at the ASGI level.

Most of what a gateway forwards is the same request: a modern ``tools/call`` POST with
``Mcp-Method``/``Mcp-Name``, no task, no MRTR round, for a tool the gateway has seen, of
an ``http://`` upstream with a fast lane.  The server's path serves it with machinery it
does not need (the transport's dispatch, a :class:`~mcpkit.server.Context`, the middleware
chain, a front call record), which cost the gateway ~3x its upstream's CPU per call
(issue #20).  This path takes that request from the front (:mod:`.app`) once the
request's auth, and the early rule and rate-limit checks on its headers, are done, and
serves it with the same functions as the server's path, called directly:

* the request checks of a modern POST (``_meta``, version, ``Mcp-*`` headers against the
  body), and the body read (:func:`~mcpkit.transports.http.app.read_post_body`);
* the policy: :func:`.middleware.audited` around :func:`.middleware.check_access` and
  :func:`.middleware.check_limits` (the same audit line, metrics and refusals);
* the forwarding: :meth:`.server.GatewayServer.pass_through` (the fast lane with its
  answer-size cap and upstream timeout, retagging, ``serverInfo`` stripped), then the
  answer's own fields (:meth:`~mcpkit.server.Server.modern_result`);
* a client that goes away cancels the request's task (:func:`finish_native`), which
  closes the upstream connection: the upstream's handler is cancelled too.

Anything else takes the server's path, with the body replayed when it was already read:
another method or era, a task-augmented call or an MRTR resume, a progress token or log
level (their notifications belong to the front request), a virtual server, guardrails,
operator middleware (telemetry), replicas, a tool not listed yet, and any request the
checks would refuse (the server's path gives the refusal, so it stays one answer).
``[gateway] direct_calls = false`` turns the path off.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from ..auth.resource_server import replay_body
from ..compose.bridge import passed_meta
from ..compose.upstream import Upstream
from ..protocol import headers as hdr
from ..protocol.negotiation import RequestMeta, check_modern_version, parse_modern_meta
from ..runtime.exchange import Interrupted
from ..server.tasks import declares_tasks
from ..transports.http.app import HttpOptions, read_post_body
from ..transports.http.asgi import Receive, Send
from ..transports.http.modern import finish_native
from ..transports.http.stream import send_json_answer
from ..types import jsonrpc
from ..types.codec import decode
from ..types.errors import McpError, header_mismatch
from .middleware import audited, check_access, check_limits, served_by
from .policy import Caller
from .routing import ProxyTool
from .server import param_headers

if TYPE_CHECKING:
    from .app import GatewayApp

__all__ = ["DirectCalls"]

METHOD = "tools/call"
Answer = tuple[dict[str, Any], int, list[tuple[bytes, bytes]] | None]


class _Call(NamedTuple):
    """One call the direct path took: where it goes and what it says."""

    upstream: Upstream
    who: Caller
    name: str
    original: str
    tool: ProxyTool
    params: dict[str, Any]
    meta: RequestMeta


class DirectCalls:
    """The direct path of one :class:`~mcpkit.gateway.app.GatewayApp`."""

    def __init__(self, app: GatewayApp) -> None:
        self.app = app

    async def serve(
        self, receive: Receive, send: Send, headers: dict[str, str], who: Caller, name: str
    ) -> Receive | None:
        """Answer the ``tools/call`` of ``name``: None once answered (or the client left),
        else the ``receive`` the server's path reads the request from."""
        app = self.app
        server = app.server
        found = self._route(headers, who, name)
        if found is None:
            return receive
        upstream, original, tool = found
        body = await read_post_body(app.mcp.options, headers, receive, send)
        if body is None:
            return None
        request = self._request(body, headers, name, tool)
        if request is None:
            return replay_body(body, receive)
        request_id, params, meta = request
        if server.metrics.enabled:
            server.metrics.direct_calls += 1
        # Awaited whole (a forwarded call always waits on its upstream), watched for the
        # client going away.
        coro = self._answer(_Call(upstream, who, name, original, tool, params, meta), request_id)
        try:
            answer = await finish_native(app.mcp, coro, receive)
        except Interrupted:
            return None  # the client went away: the upstream call was cancelled
        await send_json_answer(send, *answer)
        return None

    def _route(
        self, headers: dict[str, str], who: Caller, name: str
    ) -> tuple[Upstream, str, ProxyTool] | None:
        """The upstream, its name for the tool and the tool, when this request is one the
        direct path takes (decided on the headers and the gateway's state alone)."""
        server = self.app.server
        config = server.config
        accept = headers.get("accept")
        options = self.app.mcp.options
        if (
            not config.direct_calls
            or not options.modern
            or config.guardrails
            or server.middleware
            or who.view is not None
            or headers.get("content-type") != "application/json"
            or (accept is not None and ("application/json" not in accept or "q=" in accept))
            or not _declared_within(headers.get("content-length"), options)
        ):
            return None
        tool = server._proxy_tools.get(name)
        if tool is None:
            return None  # not listed yet, or an MCP App's own name: the server's path
        # name_owner's answer when it needs no listing: exactly one upstream's prefix fits.
        upstream = None
        for each in server.upstreams:
            if name.startswith(each.prefix):
                if upstream is not None:
                    return None
                upstream = each
        if upstream is None:
            return None
        original = name[len(upstream.prefix) :]
        if not isinstance(upstream, Upstream) or upstream.lane is None:
            return None  # replicas, https://, stdio, openapi, [upstream.oauth]
        client = upstream.client
        if client is None or client.era != "modern" or getattr(client.session, "traced", False):
            return None
        return upstream, original, tool

    def _request(
        self, body: bytes, headers: dict[str, str], name: str, tool: ProxyTool
    ) -> tuple[Any, dict[str, Any], RequestMeta] | None:
        """The request's id, params and meta when it is a plain modern call of ``name``
        that the server's path would accept as it is; None otherwise."""
        try:
            message = decode(body)
            if jsonrpc.classify(message) is not jsonrpc.Kind.REQUEST:
                return None
            params = message.get("params")
            if message["method"] != METHOD or not isinstance(params, dict):
                return None
            if "requestState" in params or "inputResponses" in params or "task" in params:
                return None  # an MRTR resume, a task: the server's path
            version = headers.get(hdr.PROTOCOL_VERSION)
            meta = parse_modern_meta(params, supported=None)
            if meta.protocol_version != version:
                raise header_mismatch("the version header does not match _meta")
            check_modern_version(version, self.app.server.modern_versions)
            hdr.check_request_headers(headers, METHOD, params, "name", tool.header_params)
        except Exception:
            return None  # the server's path answers it (its refusal is the one answer)
        if (
            params.get("name") != name
            or meta.progress_token is not None
            or meta.log_level is not None
            or declares_tasks(meta)
        ):
            return None
        return message["id"], params, meta

    async def _answer(self, call: _Call, request_id: Any) -> Answer:
        server = self.app.server
        try:
            result = await audited(
                server, METHOD, lambda: call.who, lambda: call.name, partial(self._forward, call)
            )
        except McpError as err:
            return jsonrpc.error(request_id, err), err.http_status, err.http_headers
        server.modern_result(result)
        return jsonrpc.result(request_id, result), 200, None

    async def _forward(self, call: _Call) -> dict[str, Any]:
        """The server's path minus its dispatch: the policy layers, then the routing."""
        upstream, who, name, original, tool, params, meta = call
        server = self.app.server
        check_access(server, who, METHOD, name, params)
        if server.limiter.rules:
            await check_limits(server, who, METHOD, name)
        passed = passed_meta(params.get("_meta"), meta, None, True, True)
        params["name"] = original  # (the request's own, decoded here: renamed in place)
        result = await server.pass_through(
            upstream,
            METHOD,
            params,
            passed,
            headers=param_headers(tool, params),
            progress=None,
            limit=server.config.result_cap(name),
            what=f"{METHOD} {name}",
            front=None,
            safe=False,
            bare=True,
        )
        served_by(upstream.name)
        return result


def _declared_within(declared: str | None, options: HttpOptions) -> bool:
    """A body of known length within the limit (else the server's path reads it, and
    refuses it when it is too large)."""
    return declared is not None and declared.isdigit() and int(declared) <= options.max_body_bytes
