"""The server framework: register tools, resources, templates, prompts and completions
with decorators; capabilities follow from what is registered.

``Server`` is transport-free: transports hand it one decoded request plus a
:class:`~mcpkit.runtime.exchange.Exchange` and get a result dict back (or an
:class:`~mcpkit.types.errors.McpError`).  It never imports an HTTP library.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, overload

import anyio

from ..protocol.negotiation import RequestMeta
from ..protocol.sealing import Keyring
from ..runtime.changes import PROMPTS, RESOURCES, TOOLS, ChangeBus
from ..runtime.exchange import NULL_EXCHANGE, Exchange
from ..state.base import StateBackend
from ..types.errors import INTERNAL_ERROR, McpError, method_not_found
from ..types.jsonrpc import Message
from ..types.methods import METHODS, MethodSpec
from ..types.versions import (
    LEGACY_VERSIONS,
    META_SERVER_INFO,
    MODERN_VERSIONS,
    TASKS_EXTENSION,
    Era,
)
from . import handlers
from .apps import App, register_view, with_app_meta
from .composition import Composition
from .context import Context
from .extensions import MethodEntry, check_extension_id, declared, make_method, notification_step
from .lifespan import ServerRuntime
from .middleware import CallNext, Middleware, build_chains, wrap
from .notices import ChangeNotices
from .options import PromptOptions, ResourceOptions, ToolOptions, refuse_unknown_options
from .registry import (
    Completer,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
    check_elicit_calls,
    check_icons,
    check_tool_options,
    make_prompt,
    make_resource,
    make_tool,
)
from .settings import Setting
from .visibility import Visibility, VisibilityControls

if TYPE_CHECKING:
    from ..runtime.legacy_session import LegacySession
    from .files import ResourceObject

__all__ = ["Server"]

log = logging.getLogger("mcpkit.server")
_new_object = object.__new__
F = TypeVar("F", bound=Callable[..., object])


class Server(ChangeNotices, ServerRuntime, VisibilityControls, Composition):
    """An MCP server: what it offers, and how to answer a request for it."""

    #: Every ``tools/call`` waits (a gateway's: each is forwarded), so a transport watches
    #: it for its client going away from the start, rather than stepping it first to see.
    calls_wait = False

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        lifespan: Callable[[Server], contextlib.AbstractAsyncContextManager[object]] | None = None,
        page_size: int = 100,
        cache_ttl_ms: int = 60_000,
        cache_scope: str = "public",
        keyring: Keyring | None = None,
        modern_versions: tuple[str, ...] = MODERN_VERSIONS,
        legacy_versions: tuple[str, ...] = LEGACY_VERSIONS,
        state: StateBackend | str | None = None,
        middleware: Sequence[Middleware] = (),
        mask_errors: bool = False,
        on_duplicate: str = "error",
        include_tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] | None = None,
        mirror_structured: bool = True,
    ) -> None:
        if on_duplicate not in ("error", "warn", "replace"):
            raise ValueError("on_duplicate must be 'error', 'warn' or 'replace'")
        self.on_duplicate = on_duplicate
        #: Tools' default for ``mirror_structured`` (see :meth:`tool`).
        self.mirror_structured = mirror_structured
        self.visibility = Visibility(include_tags, exclude_tags)
        self.name = name
        self.version = version
        info: dict[str, Any] = {"name": name, "version": version}
        for key, value in (
            ("title", title),
            ("description", description),
            ("websiteUrl", website_url),
            ("icons", check_icons(icons)),
        ):
            if value:
                info[key] = value
        if website_url and not website_url.lower().startswith(("https://", "http://")):
            raise ValueError("website_url must be an http(s) URL")
        self.info = info
        self.instructions = instructions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.modern_versions = modern_versions
        self.legacy_versions = legacy_versions
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: list[TemplateEntry] = []
        self.prompts: dict[str, PromptEntry] = {}
        self.completer: Completer | None = None
        self.bus = ChangeBus()
        #: Declared extensions and their settings (``capabilities.extensions``), besides
        #: those the registered custom methods belong to.
        self.extensions: dict[str, dict[str, Any]] = {}
        #: Environment variables the server reads, by name (:meth:`setting`).
        self.settings: dict[str, Setting] = {}
        #: Custom requests and client notifications (``@server.method``,
        #: ``@server.notification_handler``), and their rows of the method table.
        self.custom_methods: dict[str, MethodEntry] = {}
        self.custom_specs: dict[str, MethodSpec] = {}
        #: The MCP Apps views registered through ``@server.tool(app=...)``, by URI.
        self.app_views: dict[str, App] = {}
        self._init_composition()  # mounts, tool transforms, tool search
        self._keyring = keyring
        self._lifespan = lifespan
        self._lifespan_stack: contextlib.AsyncExitStack | None = None
        self._lifespan_users = 0
        self._lifespan_lock: anyio.Lock | None = None
        #: Set when the last user of the current lifespan has left (see :meth:`running`).
        self._lifespan_idle: anyio.Event | None = None
        self.lifespan_state: Any = None
        self.result_meta = {META_SERVER_INFO: self.info}
        self._list_cache: dict[str, list[dict[str, Any]]] = {}
        self._handlers = handlers.table(self)
        #: Middleware in onion order, and per method the chain dispatch runs: the handler
        #: itself when no middleware wraps that method (see :mod:`.middleware`).
        self.middleware: list[Middleware] = []
        self._chains: dict[str, CallNext] = self._handlers
        self._task_tools = False
        if mask_errors:
            from .middleware.masking import ErrorMasking

            self.add_middleware(ErrorMasking())
        for m in middleware:
            self.add_middleware(m)
        self._state: StateBackend | None = None
        self._state_url: str | None = None
        if isinstance(state, str):
            self._state_url = state
        else:
            self._state = state
        self._tasks = None
        self._tg = None
        self.task_ttl_ms = 3_600_000
        self.task_poll_interval_ms = 250

    # ------------------------------------------------------------------ registration
    def setting(
        self,
        name: str,
        *,
        description: str,
        secret: bool = False,
        required: bool | None = None,
        default: str | None = None,
        title: str | None = None,
    ) -> Setting:
        """Declare the environment variable ``name`` that the server reads; returns it,
        its ``.value`` read when asked.  ``required`` defaults to "no default given";
        ``secret`` marks a key or password (a bundle's host masks it)."""
        if name in self.settings:
            raise ValueError(f"setting {name!r} is declared twice")
        declared = Setting(
            name,
            description,
            secret=secret,
            required=default is None if required is None else required,
            default=default,
            title=title,
        )
        self.settings[name] = declared
        return declared

    @overload
    def tool(self, fn: F, /, **options: Unpack[ToolOptions]) -> F: ...
    @overload
    def tool(self, fn: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...
    def tool(self, fn: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
        """Register a function as a tool.  Use bare (``@server.tool``) or with options
        (:class:`~mcpkit.server.options.ToolOptions`; their defaults:
        :func:`~mcpkit.server.registry.make_tool`).

        The input schema comes from the type hints (or ``input_schema``); a parameter
        annotated ``Context`` receives the request context.  Returning a ``dict``, a
        TypedDict, a dataclass or a pydantic model gives structured output with an
        ``outputSchema``; other annotated returns stay text unless
        ``structured_output=True``, which wraps them as ``{"result": value}``.

        ``mirror_structured=False`` (or ``Server(mirror_structured=False)`` for every tool)
        leaves the JSON text copy of ``structuredContent`` out of ``content``: a client
        that reads ``structuredContent`` then gets the value once, not twice (the spec's
        default, kept unless asked, mirrors it for clients that read only ``content``).

        ``app=App(uri="ui://...", html=... or path=..., csp=..., domain=...)`` gives the
        tool an MCP Apps view: the ``ui://`` resource, the tool's ``_meta.ui`` and the
        extension entry are written for it (:mod:`mcpkit.server.apps`).

        ``task="optional"`` lets the call run as a durable task (tasks extension) when the
        client supports it; ``task="required"`` refuses clients that do not (-32021).
        ``task_start="manual"``: the tool gathers input synchronously and then calls
        ``await ctx.start_task()``.

        A plain ``def`` tool runs in a worker thread (:mod:`mcpkit.runtime.threads`: at most
        40 calls at once per event loop), so one that blocks (``requests.get``, a database
        driver, CPU work) never stalls other clients, as in Starlette, FastAPI, FastMCP and
        the SDK.  ``inline=True`` runs it on the event loop instead (no thread hop), for a
        quick, non-blocking function only.  ``async def`` tools always run on the loop.

        ``timeout`` (seconds): a call still running then is cancelled and answers with an
        ``isError`` result (see :class:`~mcpkit.server.middleware.timeout.ToolTimeout`,
        added on first use).  A plain ``def`` tool with a timeout runs in a worker thread,
        the only way it can be abandoned; the thread itself runs on to its end.
        """
        refuse_unknown_options("tool", options, ToolOptions)
        check_tool_options(
            options.get("timeout"),
            options.get("inline", False),
            options.get("task", "forbidden"),
            options.get("task_start", "auto"),
        )

        app = options.get("app")
        if app is not None:
            if not isinstance(app, App):
                raise TypeError("app= takes an mcpkit.server.App")
            options["meta"] = with_app_meta(options.get("meta"), app)

        def register(func: F) -> F:
            check_elicit_calls(func)
            entry = make_tool(func, Context, **options)
            if entry.mirror_structured is None:
                entry.mirror_structured = self.mirror_structured
            if entry.timeout is not None:
                self._ensure_timeouts()
            if entry.task_support != "forbidden":
                self._task_tools = True
            self._check_duplicate("tool", entry.name, entry.name in self.tools)
            if app is not None:
                register_view(self, app)
            self.tools[entry.name] = entry
            self._changed(TOOLS)
            return func

        return register(fn) if fn is not None else register

    def _check_duplicate(self, kind: str, name: str, exists: bool) -> None:
        """A second registration under a taken name: ``on_duplicate`` decides.  "error"
        by default, because a silent replacement (two modules defining ``search``) hides
        one of them from every client."""
        if not exists or self.on_duplicate == "replace":
            return
        text = f"{kind} {name!r} is already registered on server {self.name!r}"
        if self.on_duplicate == "error":
            raise ValueError(f"{text} (Server(on_duplicate='replace' or 'warn') allows it)")
        log.warning("%s; the new one replaces it", text)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; clients listening for changes are told the list changed."""
        if self.tools.pop(name, None) is not None:
            self._changed(TOOLS)

    def resource(self, uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
        """Register a resource (or a resource template when ``uri`` has ``{variables}``);
        options: :class:`~mcpkit.server.options.ResourceOptions`.

        The function returns ``str`` (text), ``bytes`` (blob) or content dicts; template
        variables arrive as keyword arguments.
        """
        refuse_unknown_options("resource", options, ResourceOptions)

        def register(func: F) -> F:
            entry = make_resource(func, Context, uri, **options)
            if isinstance(entry, TemplateEntry):
                same = [t for t in self.templates if t.wire["uriTemplate"] == uri]
                self._check_duplicate("resource template", uri, bool(same))
                for old in same:
                    self.templates.remove(old)
                self.templates.append(entry)
            else:
                self._check_duplicate("resource", uri, uri in self.resources)
                self.resources[uri] = entry
            self._changed(RESOURCES)
            return func

        return register

    @overload
    def prompt(self, fn: F, /, **options: Unpack[PromptOptions]) -> F: ...
    @overload
    def prompt(self, fn: None = None, /, **options: Unpack[PromptOptions]) -> Callable[[F], F]: ...
    def prompt(
        self, fn: F | None = None, /, **options: Unpack[PromptOptions]
    ) -> F | Callable[[F], F]:
        """Register a prompt; its string parameters are the prompt's arguments (options:
        :class:`~mcpkit.server.options.PromptOptions`)."""
        refuse_unknown_options("prompt", options, PromptOptions)

        def register(func: F) -> F:
            entry = make_prompt(func, Context, **options)
            self._check_duplicate("prompt", entry.name, entry.name in self.prompts)
            self.prompts[entry.name] = entry
            self._changed(PROMPTS)
            return func

        return register(fn) if fn is not None else register

    def add_resource(self, resource: ResourceObject) -> None:
        """Register a resource object (:mod:`mcpkit.server.files`: ``TextResource``,
        ``FileResource``, ``DirectoryResource``)."""
        resource.register(self)

    def completion(self, fn: F) -> F:
        """Register the argument-completion handler.

        Called as ``fn(ref, argument, context)`` with the raw ``ref`` (``{"type":
        "ref/prompt", "name": ...}`` or ``{"type": "ref/resource", "uri": ...}``), the
        ``{"name", "value"}`` argument and the already-resolved arguments (or None).  Returns
        a list of strings or a full ``completion`` dict.
        """
        self.completer = fn
        return fn

    # ------------------------------------------------------------------ extensions
    def extension(self, identifier: str, settings: Mapping[str, Any] | None = None) -> None:
        """Declare the extension ``identifier`` (``com.example/notes``) with its settings
        object under ``capabilities.extensions``; methods registered for it declare it
        with ``{}`` on their own."""
        self.extensions[check_extension_id(identifier)] = dict(settings or {})

    def method(self, name: str, *, extension: str | None = None) -> Callable[[F], F]:
        """Register ``fn`` as the custom request ``name`` of an extension (default: the
        name's first two segments, ``com.example/notes/search`` -> ``com.example/notes``).

        Its params are the function's parameters, checked against their type hints
        (-32602 on a mismatch); a parameter annotated ``Context`` receives the request
        context.  Its result is the returned dict, TypedDict, dataclass or pydantic model
        (None: ``{}``).  Middleware wraps it like any method (``on_request``)."""

        def register(func: F) -> F:
            self._add_custom(make_method(func, Context, name, extension, notification=False))
            return func

        return register

    def notification_handler(self, name: str, *, extension: str | None = None) -> Callable[[F], F]:
        """Register ``fn`` for the custom notification ``name`` sent by clients (params as
        for :meth:`method`; its return value is ignored).  Middleware sees it through
        ``on_notification``; a failure is logged, never answered."""

        def register(func: F) -> F:
            self._add_custom(make_method(func, Context, name, extension, notification=True))
            return func

        return register

    def _add_custom(self, entry: MethodEntry) -> None:
        self._check_duplicate("method", entry.name, entry.name in self.custom_methods)
        self.custom_methods[entry.name] = entry
        self.custom_specs[entry.name] = entry.spec
        if entry.spec.kind == "request":
            self._handlers[entry.name] = entry.call
        else:
            self._handlers.pop(entry.name, None)
        self._chains = build_chains(self._handlers, self.middleware)

    def skills(self, folder: str | os.PathLike[str]) -> list[str]:
        """Publish every skill of ``folder`` (a directory per skill, each with a
        ``SKILL.md``) through the Skills extension: its files as ``skill://`` resources,
        ``skills/list``, ``skills/get`` and ``resources/directory/read``
        (:mod:`mcpkit.server.skills`).  Returns the URIs of the skills' ``SKILL.md``."""
        from .skills import publish

        return [skill.uri for skill in publish(self, folder)]

    # ------------------------------------------------------------------ middleware
    def add_middleware(self, middleware: Middleware) -> None:
        """Add ``middleware`` as the innermost layer (after those already added)."""
        if not isinstance(middleware, Middleware):
            raise TypeError("middleware must be an instance of mcpkit.server.Middleware")
        self.middleware.append(middleware)
        self._chains = build_chains(self._handlers, self.middleware)

    def _ensure_timeouts(self) -> None:
        from .middleware.timeout import ToolTimeout

        if not any(isinstance(m, ToolTimeout) for m in self.middleware):
            self.add_middleware(ToolTimeout())

    # ------------------------------------------------------------------ capabilities
    def capabilities(self, era: Era = "modern") -> dict[str, Any]:
        """Derived from registrations: a feature is advertised iff something provides it."""
        caps: dict[str, Any] = {"logging": {}}
        if self.tools:
            caps["tools"] = {"listChanged": True}
        if self.prompts:
            caps["prompts"] = {"listChanged": True}
        if self.resources or self.templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.completer is not None:
            caps["completions"] = {}
        if era == "legacy" and any(t.task_support != "forbidden" for t in self.tools.values()):
            from .task_eras import LEGACY_TASKS_CAPABILITY

            caps["tasks"] = LEGACY_TASKS_CAPABILITY
        if era == "modern":  # 2025-11-25 has no extensions capability (nor does the SDK say one)
            extensions = declared(self.extensions, self.custom_methods)
            if any(t.task_support != "forbidden" for t in self.tools.values()):
                extensions[TASKS_EXTENSION] = {}
            if extensions:
                caps["extensions"] = extensions
        if self.mounts:
            from .mount import merge_capabilities

            merge_capabilities(self, caps, era)
        return caps

    def answers_for(self, path: str) -> bool:
        """Whether :meth:`capabilities` offers ``path``; built per request only when needed."""
        head = path.partition(".")[0]
        if type(self).capabilities is Server.capabilities and not self.mounts:
            if head == "tools":
                return bool(self.tools)
            if head == "prompts":
                return bool(self.prompts)
            if head == "resources":
                return bool(self.resources or self.templates)
            if head == "completions":
                return self.completer is not None
            if head == "logging":
                return True
        return head in self.capabilities()

    # ------------------------------------------------------------------ dispatch
    async def dispatch(
        self,
        message: Message,
        meta: RequestMeta,
        exchange: Exchange,
        *,
        session: LegacySession | None = None,
        principal: object = None,
        local: CallNext | None = None,
    ) -> dict[str, Any]:
        """Answer one request: the one path every transport, era and mode takes.  It runs
        the middleware chain and then the handler; a task-backed ``tools/call`` runs that
        same chain inside its task and answers with the CreateTaskResult.

        ``local``: the legacy session answers this request itself (``initialize``,
        ``ping``, ``logging/setLevel``, subscriptions); dispatch wraps that answer in
        the middleware chain like any handler.

        The single place where exceptions become protocol errors: :class:`McpError`
        passes through, anything else becomes -32603 (logged)."""
        method: str = message["method"]
        if local is None:
            handler = self._chains.get(method)
            spec = METHODS.get(method) or self.custom_specs.get(method)
            if handler is None or spec is None or meta.era not in spec.eras:
                raise method_not_found(method)
            if spec.capability is not None and not self.answers_for(spec.capability):
                raise method_not_found(method)
        else:  # a legacy session's own method (initialize, ping, ...): its answer, wrapped
            handler = wrap(local, method, self.middleware) if self.middleware else local
        # Not Context(...): on CPython 3.11 calling a class with keyword arguments builds a
        # kwargs dict per call; __new__ then __init__ is the same object, built sooner.
        ctx = _new_object(Context)
        Context.__init__(
            ctx,
            self,
            meta,
            message.get("id"),
            exchange,
            method=method,
            params=message.get("params") or {},
            session=session,
            principal=principal,
        )
        try:
            result: dict[str, Any]
            if self._task_tools and method == "tools/call":
                tool = handlers.task_tool(self, ctx)
                if tool is not None:
                    result = await self.tasks.start(
                        ctx, functools.partial(handler, ctx), manual=tool.task_manual
                    )
                else:
                    result = await handler(ctx)
            else:
                result = await handler(ctx)
        except McpError:
            raise
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log.exception("error handling %s", method)
            raise McpError(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}") from exc
        if meta.era == "modern":
            self.modern_result(result)
        return result

    def modern_result(self, result: dict[str, Any]) -> None:
        """Give a modern answer its own fields: ``resultType`` and this server's
        ``serverInfo`` in ``_meta``."""
        result.setdefault("resultType", "complete")
        own = result.get("_meta")
        if own is None:
            result["_meta"] = self.result_meta
        elif isinstance(own, dict) and META_SERVER_INFO not in own:
            result["_meta"] = {**own, META_SERVER_INFO: self.info}

    async def dispatch_notification(
        self,
        message: Message,
        *,
        session: LegacySession | None = None,
        principal: object = None,
    ) -> None:
        """A notification from the client, through the middleware's ``on_notification``
        (transports call this after their own handling, e.g. of cancellation).  Nothing
        is answered, so a failing hook is logged, never sent.  A custom notification
        (``@server.notification_handler``) runs its handler inside that chain."""
        custom = self.custom_methods.get(message["method"])
        if custom is not None and custom.spec.kind != "notification":
            custom = None
        if not self.middleware and custom is None:
            return
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if session is not None:
            meta = session.meta_for(params)
        else:
            meta = RequestMeta(era="modern", protocol_version=self.modern_versions[0])
        ctx = Context(
            self,
            meta,
            None,
            NULL_EXCHANGE,
            method=message["method"],
            params=params,
            session=session,
            principal=principal,
        )
        innermost = _nothing if custom is None else notification_step(custom)
        chain = wrap(innermost, ctx.method, self.middleware, notification=True)
        try:
            await chain(ctx)
        except Exception:
            log.exception("handling notification %s failed", ctx.method)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, meta: RequestMeta | None = None
    ) -> dict[str, Any]:
        """In-process dispatch (no transport): handy for tests and embedding.  The request
        runs in the caller's task, and only the caller can cancel it, so it is awaited
        directly (no handle from the request runner, ``runtime.runner``)."""
        message = {"jsonrpc": "2.0", "id": 0, "method": method, "params": params or {}}
        if meta is None:
            meta = RequestMeta(era="modern", protocol_version=self.modern_versions[0])
        return await self.dispatch(message, meta, NULL_EXCHANGE)


async def _nothing(ctx: Context) -> dict[str, Any]:
    """The innermost step of a notification's chain: the transport already acted on it."""
    return {}
