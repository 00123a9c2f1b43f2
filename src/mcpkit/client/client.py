"""The public client: typed methods for every client request of both protocol eras.

::

    async with Client("python server.py") as client:          # stdio (or an argv list)
        tools = await client.list_tools()                      # every page
        result = await client.call_tool("add", {"a": 1, "b": 2})

    async with Client("http://127.0.0.1:8000/mcp", elicitation=ask_user) as client: ...

    async with Client(server) as client: ...        # a Server object: in memory (tests)

Layering: :class:`Session` negotiates the era and wraps each request; the transports move
bytes; this class adds what an application wants on top: typed methods, automatic
pagination, the TTL cache, ``x-mcp-header`` bookkeeping (tools with invalid annotations
are dropped on HTTP), the MRTR loop, and routing of server notifications.  Exception
groups from task groups never escape: :func:`~mcpkit.client.errors.unwrap` picks the error
that explains them.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack, cast

from ..protocol.headers import HeaderParam, InvalidHeaderAnnotation, expected_param_headers
from ..protocol.headers import header_params as parse_header_params
from ..runtime.contracts import ServedServer
from ..transports.client_base import ClientTransport
from ..types.errors import HEADER_MISMATCH, McpError
from ..types.unset import UNSET, Unset
from ..types.versions import Era
from . import callbacks as cb
from .cache import ResultCache
from .callbacks import Callbacks, ProgressCallback
from .errors import (
    ClientError,
    ConnectError,
    HttpStatusError,
    InvalidResultError,
    ServerError,
    error_boundary,
    unwrap,
)
from .extensions import ExtensionCalls
from .listen import Subscription, build_filter
from .models import (
    CallToolResult,
    CompleteResult,
    DiscoverResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ServerInfo,
    Tool,
)
from .mrtr import continue_with_input
from .options import ClientOptions, ClientSettings, legacy_sse_fallback, transport_for
from .session import Session
from .tasks import Task, TaskStatusCallback, legacy_task_wanted
from .typed import tool_result
from .url_elicitation import URL_ELICITATION_REQUIRED
from .url_elicitation import fulfil as fulfil_url_elicitations

if TYPE_CHECKING:
    from .group import ClientGroup

log = logging.getLogger("mcpkit.client")

_MAX_PAGES = 1000


class Client(ExtensionCalls):
    """A connection to one MCP server, either era: stdio, Streamable HTTP (or the older
    HTTP+SSE), or in memory to a ``Server`` object."""

    def __init__(
        self,
        target: str | Sequence[str] | ClientTransport | ServedServer,
        *,
        options: ClientOptions | None = None,
        elicitation: cb.ElicitationHandler | None = None,
        url_elicitation: cb.UrlElicitationHandler | None = None,
        sampling: cb.SamplingHandler | None = None,
        sampling_tools: bool = False,
        roots: cb.RootsProvider | None = None,
        on_log: cb.LogHandler | None = None,
        on_notification: cb.NotificationHandler | None = None,
        **overrides: Unpack[ClientSettings],
    ) -> None:
        opts = options or ClientOptions()
        if overrides:
            opts = opts.replace(**overrides)
        self.options = opts
        self.callbacks = Callbacks(
            elicitation, url_elicitation, sampling, sampling_tools, roots, on_log, on_notification
        )
        self.transport = transport_for(target, opts)
        self.session = Session(self.transport, opts, self.callbacks)
        cache = opts.features.cache
        self.cache: ResultCache | None = (
            cache if isinstance(cache, ResultCache) else ResultCache() if cache else None
        )
        self._owner = object()  # identifies this client's private cache entries
        self._tool_headers: dict[str, tuple[HeaderParam, ...]] = {}
        #: Each listed tool's ``execution.taskSupport`` (2025-11-25).
        self._task_support: dict[str, str] = {}
        #: Tools left out of ``list_tools`` because of invalid ``x-mcp-header``s, and why.
        self.dropped_tools: dict[str, str] = {}
        self._legacy_listeners: set[Subscription] = set()
        self._init_extension_state()
        self._stack: contextlib.AsyncExitStack | None = None

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | str | os.PathLike[str], **options: Any
    ) -> ClientGroup:
        """One client over every server of an ``mcpServers`` configuration (a dict or a
        JSON file), parsed as the host parses it; names are namespaced (``server__tool``,
        ``data://server/path``).  See :mod:`mcpkit.client.group`."""
        from .group import ClientGroup

        return ClientGroup.from_config(config, **options)

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def connect(self) -> ServerInfo:
        """Start the transport and negotiate the era (done by ``async with``).

        A URL whose POST of ``initialize`` is refused with 400/404/405 is tried as a
        2024-11-05 HTTP+SSE server (GET, expecting an ``endpoint`` event), as the spec's
        backwards-compatibility section says; not with ``era="modern"``."""
        if self._stack is not None:
            raise RuntimeError("already connected")
        try:
            return await self._connect()
        except HttpStatusError as refused:
            fallback = legacy_sse_fallback(self.transport, refused, self.options)
            if fallback is None:
                raise
            log.info(
                "%s refused a Streamable HTTP initialize (%s); trying HTTP+SSE",
                self.transport.server_key,
                refused,
            )
            self.transport = fallback
            self.session = Session(fallback, self.options, self.callbacks)
            try:
                return await self._connect()
            except ClientError as failed:
                raise ConnectError(
                    f"{refused}; as a 2024-11-05 HTTP+SSE server it failed too: {failed}"
                ) from None

    async def _connect(self) -> ServerInfo:
        stack = contextlib.AsyncExitStack()
        try:
            with error_boundary():
                await stack.enter_async_context(self.transport)
                self.transport.set_handlers(self._on_request, self._on_notification)
                info = await self.session.connect()
        except BaseException:
            # The transports shield their own shutdown; their task groups must be exited
            # in the scope they were entered in, so no shield here.
            with error_boundary(), contextlib.suppress(Exception):
                await stack.aclose()
            raise
        self._stack = stack
        return info

    async def aclose(self) -> None:
        """Disconnect (done by ``async with``): stdio servers are shut down, legacy HTTP
        sessions deleted.  The cleanup shields itself from cancellation, so do not wrap
        this in ``CancelScope(shield=True)``: like any anyio task group, the client's must
        be closed from the task and scope that connected it."""
        stack, self._stack = self._stack, None
        if stack is not None:
            with error_boundary():
                await stack.aclose()

    # ------------------------------------------------------------------ facts
    @property
    def server_info(self) -> ServerInfo:
        if self.session.info is None:
            raise RuntimeError("not connected")
        return self.session.info

    @property
    def era(self) -> Era | None:
        return self.session.era

    @property
    def protocol_version(self) -> str:
        return self.session.version

    @property
    def capabilities(self) -> dict[str, Any]:
        """The client capabilities declared to the server."""
        return self.session.capabilities()

    # ------------------------------------------------------------------ generic
    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to the server (no answer comes back)."""
        await self.session.notify(method, params)

    async def discover(self) -> DiscoverResult:
        """``server/discover`` (2026-07-28 only)."""
        self._need("server/discover")
        return cast(DiscoverResult, await self.request("server/discover"))

    async def ping(self, *, timeout: float | Unset | None = UNSET) -> None:
        """Check the server is alive: ``ping`` on legacy; on 2026-07-28 (which removed
        ping) a ``server/discover`` round trip."""
        method = "ping" if self._has("ping") else "server/discover"
        await self.request(method, timeout=timeout)

    async def set_logging_level(self, level: str) -> None:
        """Ask for log messages at ``level`` and above (``on_log`` gets them).  Modern: sent
        in every request's ``_meta``; legacy: ``logging/setLevel``."""
        self.session.set_log_level(level)
        if self._has("logging/setLevel"):
            await self.request("logging/setLevel", {"level": level})

    async def subscribe_resource(self, uri: str) -> None:
        """Legacy ``resources/subscribe`` (on 2026-07-28 use ``listen(resource_uris=...)``)."""
        self._need("resources/subscribe", "use client.listen(resource_uris=[...])")
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        """``resources/unsubscribe`` (2025-11-25 only; on 2026-07-28 leave the ``listen`` block)."""
        self._need("resources/unsubscribe", "leave the client.listen(...) block")
        await self.request("resources/unsubscribe", {"uri": uri})

    async def notify_roots_changed(self) -> None:
        """Tell a legacy server the roots changed (2026-07-28 servers ask each time)."""
        if self.callbacks.roots is not None and self._has("notifications/roots/list_changed"):
            await self.notify("notifications/roots/list_changed")

    def _has(self, method: str) -> bool:
        """``method`` exists in the negotiated era (False before connecting)."""
        rules = self.session.rules
        return rules is not None and rules.offers(method)

    def _need(self, method: str, hint: str = "") -> None:
        if not self._has(method):
            raise ClientError(
                f"{method} does not exist in protocol {self.protocol_version or '(none)'}"
                + (f"; {hint}" if hint else "")
            )

    # ------------------------------------------------------------------ tools
    async def list_tools(self, *, refresh: bool = False) -> list[Tool]:
        """Every tool (all pages), minus tools dropped for invalid ``x-mcp-header``s."""
        items = await self._paginate("tools/list", "tools", refresh)
        return cast(list[Tool], self._accept_tools(items))

    async def list_tools_page(
        self, cursor: str | None = None, *, refresh: bool = False
    ) -> dict[str, Any]:
        """One page of ``tools/list`` from ``cursor``: the raw result with ``nextCursor``
        (tools with invalid ``x-mcp-header`` annotations dropped, as in :meth:`list_tools`)."""
        page = await self._page("tools/list", cursor, refresh)
        tools = page.get("tools")
        if isinstance(tools, list):
            page = {**page, "tools": self._accept_tools(tools)}
        return page

    def _accept_tools(self, tools: list[Any]) -> list[dict[str, Any]]:
        accepted = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                log.warning("ignoring a malformed tool entry: %r", tool)
                continue
            schema = tool.get("inputSchema")
            try:
                params = parse_header_params(schema) if isinstance(schema, dict) else ()
            except InvalidHeaderAnnotation as exc:
                if self.transport.kind == "http":
                    if name not in self.dropped_tools:
                        log.warning("dropping tool %r: %s", name, exc)
                    self.dropped_tools[name] = str(exc)
                    self._tool_headers.pop(name, None)
                    continue
                params = ()  # stdio has no headers: the annotation is harmless there
            self.dropped_tools.pop(name, None)
            self._tool_headers[name] = params
            execution = tool.get("execution")
            if isinstance(execution, dict) and isinstance(execution.get("taskSupport"), str):
                self._task_support[name] = execution["taskSupport"]
            accepted.append(tool)
        return accepted

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | Unset | None = UNSET,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        result_type: object = None,
        raise_on_error: bool = False,
        on_task: TaskStatusCallback | None = None,
    ) -> CallToolResult:
        """Call a tool, answering any input the server asks for along the way.

        When the server runs the call as a task, ``on_task`` gets the task record each
        time its status or status message changes, until the result arrives.

        ``result.data`` is the structured content, validated into ``result_type`` (a
        dataclass, pydantic model, ``TypedDict``...) when given, else plain JSON.  With
        ``raise_on_error`` a result with ``isError`` raises :class:`ToolError`."""
        if name in self.dropped_tools:
            raise ClientError(
                f"tool {name!r} was dropped from the tool list: {self.dropped_tools[name]}"
            )
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if legacy_task_wanted(self.era, self._task_support.get(name), self.options.features):
            params["task"] = {}
        refetched = False
        while True:
            headers = self._param_headers(name, arguments)
            try:
                result = await self._with_input(
                    "tools/call", params, timeout, on_progress, meta, headers
                )
            except McpError as exc:
                if exc.code != HEADER_MISMATCH or headers is None or refetched:
                    raise
                refetched = True  # our view of the tool's x-mcp-header may be stale
                await self.list_tools(refresh=True)
                continue
            if result.get("resultType") == "task" or "task" in result:
                with error_boundary():
                    result = await self._task(result).result(on_status=on_task)
            content = result.get("content")
            if content is not None and not isinstance(content, list):
                raise InvalidResultError(f"tools/call {name}: content is not a list")
            return tool_result(name, result, result_type, raise_on_error)

    async def start_tool_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl_ms: int | None = None,
    ) -> Task | CallToolResult:
        """Call a tool, returning the :class:`Task` when the server runs it as one
        (``await task`` for the result) or the result when it answered at once.
        2026-07-28: needs ``tasks=True``.  2025-11-25: asks for a task (``ttl_ms``: its
        requested retention); the tool's ``execution.taskSupport`` must allow one."""
        legacy = self.era == "legacy"
        if not legacy and not self.options.features.tasks:
            raise ClientError("start_tool_task needs Client(..., tasks=True)")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if legacy:
            params["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
        result = await self._with_input(
            "tools/call", params, UNSET, None, None, self._param_headers(name, arguments)
        )
        if result.get("resultType") == "task" or (legacy and "task" in result):
            return self._task(result)
        return tool_result(name, result)

    def _task(self, created: dict[str, Any]) -> Task:
        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            return await self.request(method, params)

        return self._held(Task(created, request, self.callbacks, self.era or "modern"))

    def _param_headers(
        self, name: str, arguments: Mapping[str, Any] | None
    ) -> dict[str, str] | None:
        rules = self.session.rules
        if self.transport.kind != "http" or rules is None or not rules.param_headers:
            return None
        params = self._tool_headers.get(name, ())
        return expected_param_headers(params, arguments) if params else {}

    # ------------------------------------------------------------------ prompts
    async def list_prompts(self, *, refresh: bool = False) -> list[Prompt]:
        """Every prompt, all pages; cached for the result's ``ttlMs`` unless ``refresh``."""
        return cast(list[Prompt], await self._paginate("prompts/list", "prompts", refresh))

    async def list_prompts_page(
        self, cursor: str | None = None, *, refresh: bool = False
    ) -> dict[str, Any]:
        """One page of ``prompts/list`` from ``cursor``, with ``nextCursor``."""
        return await self._page("prompts/list", cursor, refresh)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | Unset | None = UNSET,
        meta: Mapping[str, Any] | None = None,
    ) -> GetPromptResult:
        """``prompts/get``: the prompt's messages for ``arguments``; input requests on the way
        are answered with the client's callbacks."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        result = await self._with_input("prompts/get", params, timeout, None, meta, None)
        if not isinstance(result.get("messages", []), list):
            raise InvalidResultError(f"prompts/get {name}: messages is not a list")
        return cast(GetPromptResult, result)

    # ------------------------------------------------------------------ resources
    async def list_resources(self, *, refresh: bool = False) -> list[Resource]:
        """Every resource, all pages; cached for the result's ``ttlMs`` unless ``refresh``."""
        return cast(list[Resource], await self._paginate("resources/list", "resources", refresh))

    async def list_resources_page(
        self, cursor: str | None = None, *, refresh: bool = False
    ) -> dict[str, Any]:
        """One page of ``resources/list`` from ``cursor``, with ``nextCursor``."""
        return await self._page("resources/list", cursor, refresh)

    async def list_resource_templates(self, *, refresh: bool = False) -> list[ResourceTemplate]:
        """Every resource template, all pages followed; cached for the result's ``ttlMs`` unless
        ``refresh``."""
        return cast(
            list[ResourceTemplate],
            await self._paginate("resources/templates/list", "resourceTemplates", refresh),
        )

    async def list_resource_templates_page(
        self, cursor: str | None = None, *, refresh: bool = False
    ) -> dict[str, Any]:
        """One page of ``resources/templates/list`` from ``cursor``, with ``nextCursor``."""
        return await self._page("resources/templates/list", cursor, refresh)

    async def read_resource(
        self,
        uri: str,
        *,
        refresh: bool = False,
        timeout: float | Unset | None = UNSET,
        meta: Mapping[str, Any] | None = None,
    ) -> ReadResourceResult:
        """Read a resource (served from the cache while its ``ttlMs`` lasts)."""
        server = self.transport.server_key
        if self.cache is not None and not refresh:
            hit = self.cache.lookup(server, self._owner, "resources/read", uri)
            if hit is not None:
                return cast(ReadResourceResult, hit)
        rounds: list[int] = []
        result = await self._with_input(
            "resources/read", {"uri": uri}, timeout, None, meta, None, rounds
        )
        if not isinstance(result.get("contents"), list):
            raise InvalidResultError(f"resources/read {uri}: contents is not a list")
        if self.cache is not None and not rounds:
            self.cache.store(server, self._owner, "resources/read", uri, result)
        return cast(ReadResourceResult, result)

    # ------------------------------------------------------------------ completion
    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: str,
        value: str,
        *,
        context_arguments: Mapping[str, str] | None = None,
        timeout: float | Unset | None = UNSET,
    ) -> CompleteResult:
        """``completion/complete`` for ``argument`` of ``ref`` (see :func:`prompt_ref`,
        :func:`resource_ref`) given what the user typed so far."""
        params: dict[str, Any] = {"ref": dict(ref), "argument": {"name": argument, "value": value}}
        if context_arguments:
            params["context"] = {"arguments": dict(context_arguments)}
        result = await self.request("completion/complete", params, timeout=timeout)
        completion = result.get("completion")
        if not isinstance(completion, dict) or not isinstance(completion.get("values"), list):
            raise InvalidResultError("completion/complete: no completion.values list")
        return cast(CompleteResult, result)

    # ------------------------------------------------------------------ listen
    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
    ) -> Subscription:
        """Change notifications: ``async with client.listen(tools=True) as sub:``;
        ``sub.filter`` is what the server agreed to send; ``async for n in sub``."""
        return Subscription(self, build_filter(tools, prompts, resources, resource_uris))

    # ------------------------------------------------------------------ plumbing
    async def _with_input(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float | Unset | None,
        on_progress: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
        headers: dict[str, str] | None,
        rounds: list[int] | None = None,
    ) -> dict[str, Any]:
        request = self.session.request
        try:  # error_boundary(), without a generator context manager per request
            try:
                result = await request(
                    method,
                    params,
                    timeout=timeout,
                    on_progress=on_progress,
                    meta=meta,
                    headers=headers,
                )
            except ServerError as exc:  # -32042: the user visits pages, then one retry
                if exc.code != URL_ELICITATION_REQUIRED:
                    raise
                await fulfil_url_elicitations(exc, self.callbacks, self.url_completions)
                result = await request(
                    method,
                    params,
                    timeout=timeout,
                    on_progress=on_progress,
                    meta=meta,
                    headers=headers,
                )
            if result.get("resultType", "complete") == "complete":  # nearly always
                return result

            async def send(current: dict[str, Any]) -> dict[str, Any]:
                if rounds is not None and (
                    "inputResponses" in current or "requestState" in current
                ):
                    rounds.append(1)  # a retry: its result must not be cached
                return await request(
                    method,
                    current,
                    timeout=timeout,
                    on_progress=on_progress,
                    meta=meta,
                    headers=headers,
                )

            return await continue_with_input(
                method,
                params,
                result,
                send,
                self.callbacks,
                self.options.features.max_input_rounds,
                allow_task=self.options.features.tasks and method == "tools/call",
            )
        except BaseExceptionGroup as group:
            raise unwrap(group) from None

    async def _page(self, method: str, cursor: str | None, refresh: bool) -> dict[str, Any]:
        key = "" if cursor is None else "cursor:" + cursor
        server = self.transport.server_key
        if self.cache is not None and not refresh:
            hit = self.cache.lookup(server, self._owner, method, key)
            if hit is not None:
                return hit
        result = await self.request(method, {"cursor": cursor} if cursor is not None else None)
        if self.cache is not None:
            self.cache.store(server, self._owner, method, key, result)
        return result

    async def _paginate(self, method: str, member: str, refresh: bool) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_PAGES):
            page = await self._page(method, cursor, refresh)
            batch = page.get(member)
            if not isinstance(batch, list):
                raise InvalidResultError(f"{method}: the result has no {member!r} list")
            items.extend(batch)
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                return items
            if cursor in seen:
                raise InvalidResultError(f"{method}: the server repeated cursor {cursor!r}")
            seen.add(cursor)
        raise InvalidResultError(f"{method}: more than {_MAX_PAGES} pages")
