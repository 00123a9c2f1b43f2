"""The gateway's direct path: a plain 2026-07-28 ``tools/call`` answered at the ASGI level.

Most of what a gateway forwards is the same request: a modern ``tools/call`` POST with
``Mcp-Method``/``Mcp-Name``, no task, no MRTR round, for a tool the gateway has seen, of
an ``http://`` upstream with a fast lane.  The server's path serves it with machinery it
does not need (the transport's dispatch, a :class:`~mcpkit.server.Context`, the middleware
chain, a front call record), which cost the gateway ~3x its upstream's CPU per call
(issue #20).  This path takes that request from the front (:mod:`.app`) once the
request's auth, and the early rule and rate-limit checks on its headers, are done, and
serves it with the same functions as the server's path, called directly:

* the body read (:func:`~mcpkit.transports.http.app.read_post_body`) and the request
  checks of a modern POST, narrowed to the one shape this path takes (:meth:`DirectCalls._request`:
  exactly ``jsonrpc``, ``id``, ``method`` and ``params``; params of ``name``, ``arguments``
  and ``_meta`` only; a ``_meta`` of the version the header names, the client's
  capabilities and info and the trace context only), so that what it accepts is what the
  server's checks accept, without building what they build;
* the policy: :func:`.middleware.check_access` and :func:`.middleware.check_limits`,
  recorded as :func:`.middleware.audited` records them (its :func:`~.middleware.failed`
  and :func:`~.middleware.finish`: the same audit line, metrics and refusals);
* the forwarding: :func:`mcpkit.compose.lane.pass_through` (the fast lane with its
  answer-size cap and upstream timeout, ``serverInfo`` stripped), task ids retagged
  (:meth:`.server.GatewayServer.retag`), then the
  answer's own fields (:meth:`~mcpkit.server.Server.modern_result`);
* a client that goes away cancels the request's task, which closes the upstream
  connection: the upstream's handler is cancelled too.  Watched as every mcpkit HTTP
  request is (``transports.http.modern.finish_native``: a watcher once the call has
  waited 50 ms), by one timer for all the calls in flight (:class:`.deadlines.Watches`)
  rather than one armed and cancelled per call; the watch is the lane's deadline too.

Anything else takes the server's path, with the body replayed when it was already read:
another method or era, a task-augmented call or an MRTR resume, a progress token or log
level (their notifications belong to the front request), a virtual server, guardrails,
operator middleware (telemetry), replicas, a tool not listed yet, and any request the
checks would refuse (the server's path gives the refusal, so it stays one answer).
``[gateway] direct_calls = false`` turns the path off.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from ..auth.resource_server import replay_body
from ..compose.bridge import TRACE_KEYS
from ..compose.deadlines import Watches
from ..compose.lane import pass_through
from ..compose.upstream import Upstream
from ..protocol import headers as hdr
from ..transports.http.app import read_post_body
from ..transports.http.asgi import Receive, Send
from ..transports.http.stream import send_json_answer
from ..types import jsonrpc
from ..types.codec import decode
from ..types.errors import McpError
from ..types.versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    TASKS_EXTENSION,
)
from .middleware import Record, check_access, check_limits, failed, finish
from .policy import Caller
from .routing import ProxyTool
from .server import param_headers

if TYPE_CHECKING:
    from .app import GatewayApp

__all__ = ["DirectCalls"]

METHOD = "tools/call"
Route = tuple[Upstream, str, ProxyTool]
#: The members of a call this path takes; any other (``task``, ``requestState``,
#: ``inputResponses``...) sends it to the server's path.
_PARAMS = frozenset({"name", "arguments", "_meta"})
#: The ``_meta`` members it takes: not a progress token or a log level (their
#: notifications belong to the front request), nothing it would not know to pass on.
_META = frozenset({META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, *TRACE_KEYS})
_NO_ARGUMENTS: dict[str, Any] = {}


class DirectCalls:
    """The direct path of one :class:`~mcpkit.gateway.app.GatewayApp`."""

    def __init__(self, app: GatewayApp) -> None:
        self.app = app
        self._watches = Watches()

    async def serve(
        self, receive: Receive, send: Send, headers: dict[str, str], who: Caller, name: str
    ) -> Receive | None:
        """Answer the ``tools/call`` of ``name``: None once answered (or the client left),
        else the ``receive`` the server's path reads the request from."""
        app = self.app
        route = self._route(headers, who, name)
        if route is None:
            return receive
        body = await read_post_body(app.mcp.options, headers, receive, send)
        if body is None:
            return None
        request = self._request(body, headers, name, route[2])
        if request is None:
            return replay_body(body, receive)
        request_id, params, passed = request
        server = app.server
        metrics = server.metrics
        if metrics.enabled:
            metrics.direct_calls += 1
        upstream, original, tool = route
        config = server.config
        record = Record()
        outcome = "ok"
        started = time.perf_counter()
        # The server's path minus its dispatch, in this one frame (each frame more is
        # resumed on every wake-up): the policy layers (as ``middleware.audited`` runs
        # them), the routing, the answer.  Awaited whole (a forwarded call always waits
        # on its upstream), watched for the client going away.
        watches = self._watches
        watch = watches.enter(receive)
        try:
            try:
                check_access(server, who, METHOD, name, params, record)
                if server.limiter.rules:
                    await check_limits(server, who, METHOD, name)
                params["name"] = original  # (the request's own, decoded here: renamed in place)
                answer = await pass_through(
                    upstream,
                    METHOD,
                    params,
                    passed,
                    headers=param_headers(tool, params) if tool.header_params else None,
                    progress=None,
                    limit=config.result_cap(name)
                    if config.result_caps
                    else config.max_result_bytes,
                    what=f"{METHOD} {name}",
                    front=None,
                    safe=False,
                    bare=watch,
                )
                # (retag: only an answer with a task id has one to name its upstream in)
                result = server.retag(upstream, answer) if "taskId" in answer else answer
                record.upstream = upstream.name
                if result.get("resultType") == "input_required":
                    outcome = "input_required"
            finally:
                watches.leave(watch)
        except BaseException as exc:
            outcome, error = failed(METHOD, exc)
            finish(server, METHOD, who, name, record, outcome, started)
            if error is None:
                if not isinstance(exc, McpError):
                    if isinstance(exc, asyncio.CancelledError) and watch.settle():
                        return None  # the client went away: the upstream call was cancelled
                    raise
                error = exc
            answer = jsonrpc.error(request_id, error)
            status, extra = error.http_status, error.http_headers
        else:
            finish(server, METHOD, who, name, record, outcome, started)
            server.modern_result(result)
            answer, status, extra = jsonrpc.result(request_id, result), 200, None
        if watch.settle():
            return None  # the call swallowed the cancellation; the client is gone anyway
        await send_json_answer(send, answer, status, extra)
        return None

    def _route(self, headers: dict[str, str], who: Caller, name: str) -> Route | None:
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
        ):
            return None
        # A body of known length within the limit (else the server's path reads it, and
        # refuses it when it is too large).
        declared = headers.get("content-length")
        if declared is None or not declared.isdigit() or int(declared) > options.max_body_bytes:
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
        if client is None:
            return None
        session = client.session  # (its era read without the two properties)
        if session.rules is None or session.rules.name != "modern" or session.traced:
            return None
        return upstream, original, tool

    def _request(
        self, body: bytes, headers: dict[str, str], name: str, tool: ProxyTool
    ) -> tuple[Any, dict[str, Any], dict[str, Any]] | None:
        """The request's id, params and the ``_meta`` passed upstream, when it is a plain
        modern call of ``name`` in the one shape this path takes; None otherwise (the
        server's path answers it, and its refusal is the one answer).

        The shape is checked member by member rather than by the server's checks
        (``classify``, ``parse_modern_meta``, the version and ``Mcp-*`` header checks,
        ``passed_meta``: ~5 µs of a forwarded call): every request it takes passes them
        all and is forwarded as they would forward it, and anything else (an id of
        another type, a member they would ignore or refuse) goes to them.  The app has
        matched ``Mcp-Method`` and decoded ``Mcp-Name`` already."""
        try:
            message = decode(body)  # (with its repeated-member check)
        except Exception:
            return None
        if type(message) is not dict or len(message) != 4:
            return None
        request_id = message.get("id")
        params = message.get("params")
        if (
            message.get("jsonrpc") != "2.0"
            or message.get("method") != METHOD
            or (type(request_id) is not int and type(request_id) is not str)
            or type(params) is not dict
            or params.get("name") != name
            or not _PARAMS.issuperset(params)
        ):
            return None
        meta = params.get("_meta")
        arguments = params.get("arguments", _NO_ARGUMENTS)
        if type(meta) is not dict or type(arguments) is not dict or not _META.issuperset(meta):
            return None
        version = meta.get(META_PROTOCOL_VERSION)
        caps = meta.get(META_CLIENT_CAPABILITIES)
        if (
            type(version) is not str
            or version != headers.get(hdr.PROTOCOL_VERSION)
            or version not in self.app.server.modern_versions
            or type(caps) is not dict
        ):
            return None
        extensions = caps.get("extensions")
        if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
            return None  # a task-augmented call: the server's path
        if tool.header_params:
            try:
                hdr.check_param_headers(headers, tool.header_params, arguments)
            except McpError:
                return None
        # What of the front's _meta goes upstream (``compose.bridge.passed_meta``): the
        # trace context and the client's capabilities (read only, not copied).
        passed: dict[str, Any] = {}
        if len(meta) > (3 if META_CLIENT_INFO in meta else 2):
            passed.update({k: v for k in TRACE_KEYS if isinstance(v := meta.get(k), str)})
        passed[META_CLIENT_CAPABILITIES] = caps
        return request_id, params, passed
