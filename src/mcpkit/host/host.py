"""The host: many servers, one client each, one policy, one audit trail.

::

    async with Host(load_config("mcp.json"), interaction=MyPrompts()) as host:
        tools = await host.list_tools()                 # namespaced: "files__read", ...
        result = await host.call_tool("files__read", {"path": "a.txt"}, origin="model")

Every tool call goes through :meth:`Host.call_tool`: look the exposed name up, check who may
call it (the model sees only model-visible tools; an MCP App only its own server's
app-visible tools), apply the :class:`~mcpkit.host.policy.Policy` (``deny`` never reaches
the server; ``ask`` waits for the person; both checks are :mod:`.consent`), run it on
that server's client, record it.

The person is reached through an :class:`Interaction`: consent for tool calls and sampling,
answers to elicitation forms and URL requests.  The base class declines everything, which
is the safe default for a host nobody is watching.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..auth.client import TokenStore
from ..client import CallToolResult, GetPromptResult, ReadResourceResult
from .apps import AppDocument, prepare_app
from .config import HostConfig, ServerConfig
from .connection import ConnectionCallbacks, ServerConnection, ServerUnavailable
from .consent import authorize_app_action, authorize_tool, check_caller
from .interaction import (
    Interaction,
    SamplingModel,
    ServerRequests,
    ToolCancelled,
    ToolDenied,
)
from .oauth import ServerLogin, wants_oauth
from .policy import (
    AuditTrail,
    Permission,
    Policy,
)
from .tools import HostTool, ToolIndex, exposed_name
from .trust import TrustStore

T = TypeVar("T")

__all__ = ["Host", "Interaction", "ToolCancelled", "ToolDenied"]

log = logging.getLogger("mcpkit.host")


class Host(ServerRequests):
    """Many servers, one isolated client each, with one policy and one audit trail; every tool
    call goes through :meth:`call_tool` (see the module's description)."""

    def __init__(
        self,
        config: HostConfig | None = None,
        *,
        interaction: Interaction | None = None,
        policy: Policy | None = None,
        audit: AuditTrail | None = None,
        sampler: SamplingModel | None = None,
        health_interval: float = 10.0,
        trust: TrustStore | None = None,
        token_store: TokenStore | None = None,
        wait: bool = True,
    ) -> None:
        self.config = config or HostConfig()
        self.interaction = interaction or Interaction()
        self.policy = policy or Policy(
            self.config.default_permission,
            servers=self.config.server_permissions,
            tools=self.config.tool_permissions,
        )
        self.audit = audit or AuditTrail(self.config.audit_log)
        self.audit.on_entry = lambda e: self.emit("audit", e.to_json())
        self.sampler = sampler
        self.health_interval = health_interval
        #: With a store, a config's stdio server the person has not trusted yet is held
        #: back (in :attr:`untrusted`) until :meth:`trust_server`; None: no trust step.
        self.trust = trust
        self.untrusted: dict[str, ServerConfig] = {}
        #: With a token store, HTTP servers get OAuth on demand (see :mod:`.oauth`).
        self.token_store = token_store
        self.logins: dict[str, ServerLogin] = {}
        #: Recent log messages of servers and their app views, newest last.
        self.logs: collections.deque[dict[str, Any]] = collections.deque(maxlen=500)
        #: Whether ``async with`` waits for each server's first connection attempt (a web
        #: page sets False: a log-in may need the page that is not served yet).
        self.wait = wait
        self.servers: dict[str, ServerConnection] = {}
        #: Tools each server's client left out, and why (invalid ``x-mcp-header`` on HTTP).
        self.dropped: dict[str, dict[str, str]] = {}
        self._index = ToolIndex()
        self._tg: anyio.abc.TaskGroup | None = None
        self._subscribers: set[MemoryObjectSendStream[tuple[str, dict[str, Any]]]] = set()
        #: Called with every event, in the emitting task (a transcript kept on disk).
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        #: Tool calls running now, by the caller's call id, so a person can cancel them.
        self._running: dict[str, anyio.CancelScope] = {}
        #: (server, view, addresses) the person let a view connect to, for this run.
        self._granted_connect: set[tuple[str, str, tuple[str, ...]]] = set()

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Host:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            async with anyio.create_task_group() as starting:
                for server in self.config.servers:
                    if server.disabled:
                        continue
                    if self.trust is not None and self.trust.needs_trust(server):
                        self.untrusted[server.name] = server
                        self.emit("server", self.untrusted_status(server.name))
                    elif self.wait:
                        starting.start_soon(self.add_server, server)
                    else:
                        self._tg.start_soon(self.add_server, server)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        conns = list(self.servers.values())
        for conn in conns:
            conn.stop()
        with anyio.move_on_after(10):
            for conn in conns:
                await conn.finished.wait()
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)

    async def add_server(self, config: ServerConfig) -> ServerConnection:
        """Connect a server (returns after the first attempt, connected or not)."""
        if self._tg is None:
            raise RuntimeError("use 'async with Host(...)' first")
        if config.name in self.servers:
            raise ValueError(f"a server named {config.name!r} already exists")
        if config.permission is not None:
            self.policy.set_server(config.name, config.permission)
        for tool, permission in config.tools.items():
            self.policy.set_tool(exposed_name(config.name, tool), permission)
        cb = ConnectionCallbacks(
            elicit=self._elicit,
            elicit_url=self._elicit_url,
            url_completed=self._url_completed,
            sample=self._sample if self.sampler is not None else None,
            roots=self._roots if self.config.roots else None,
            log=self._server_log,
        )
        if self.token_store is not None and wants_oauth(config):
            login = ServerLogin(config, self.token_store, self._login_needed)
            self.logins[config.name] = login
            cb.auth, cb.auth_status = login.auth, login.status
        conn = ServerConnection(config, cb, self.emit, health_interval=self.health_interval)
        self.servers[config.name] = conn
        self._tg.start_soon(conn.run)
        await conn.attempted.wait()
        return conn

    def untrusted_status(self, name: str) -> dict[str, Any]:
        """A held-back server, in the shape of :meth:`ServerConnection.status`."""
        config = self.untrusted[name]
        return {
            "name": name,
            "state": "untrusted",
            "transport": config.transport,
            "target": config.describe(),
            "restarts": 0,
            "era": None,
            "protocolVersion": None,
            "serverInfo": None,
            "instructions": None,
            "error": "not started: this command has not been trusted yet",
            "changes": self.trust_changes(name),
        }

    def trust_changes(self, name: str) -> list[str]:
        """What changed in held-back server ``name``'s launch since it was last trusted
        (empty when it never was)."""
        config = self.untrusted.get(name)
        return self.trust.changes(config) if config is not None and self.trust else []

    async def trust_server(self, name: str) -> ServerConnection:
        """The person trusts a held-back server: remember it and start it."""
        config = self.untrusted.pop(name, None)
        if config is None:
            raise ValueError(f"no untrusted server named {name!r}")
        if self.trust is not None:
            self.trust.trust(config)
        self.audit.record(
            "trust", name, config.describe(), origin="user", decision="trusted", by="user"
        )
        return await self.add_server(config)

    def _login_needed(self, server: str, url: str) -> None:
        self.audit.record("oauth", server, "login", origin="server", decision="asked", by="user")
        conn = self.servers.get(server)
        if conn is not None:
            self.emit("server", conn.status())
        self.interaction.login_url(server, url)

    def logout(self, name: str) -> None:
        """Forget ``name``'s OAuth tokens and reconnect (its next 401 asks again)."""
        login = self.logins.get(name)
        if login is None:
            raise ValueError(f"server {name!r} does not use OAuth")
        login.logout()
        self.audit.record("oauth", name, "logout", origin="user", decision="logged-out", by="user")
        self.connection(name).restart()

    def remove_server(self, name: str) -> None:
        """Stop a server and forget it, with the approvals and login remembered for it."""
        if self.untrusted.pop(name, None) is not None:
            self.emit("removed", {"server": name})
            return
        conn = self.servers.pop(name, None)
        if conn is not None:
            conn.stop()
            self.policy.forget_server(name)
            self.logins.pop(name, None)
            self.emit("removed", {"server": name})

    def connection(self, name: str) -> ServerConnection:
        """The connection of server ``name``; :class:`ServerUnavailable` if there is none
        (``unknown`` unless it waits to be trusted)."""
        try:
            return self.servers[name]
        except KeyError:
            if name in self.untrusted:
                reason = f"server {name!r} is not trusted yet (trust it in the servers list)"
                raise ServerUnavailable(reason) from None
            raise ServerUnavailable(f"no server named {name!r}", unknown=True) from None

    # ------------------------------------------------------------------ events
    def emit(self, kind: str, data: Mapping[str, Any]) -> None:
        """Send a host event (``kind``, ``data``) to every subscriber; a subscriber that is not
        keeping up loses it rather than stalling the host."""
        for listener in self.listeners:
            listener(kind, dict(data))
        for send in list(self._subscribers):
            try:
                send.send_nowait((kind, dict(data)))
            except anyio.WouldBlock:
                log.warning("an event subscriber is not keeping up; dropped %s", kind)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._subscribers.discard(send)

    @contextlib.asynccontextmanager
    async def events(self) -> AsyncIterator[MemoryObjectReceiveStream[tuple[str, dict[str, Any]]]]:
        """``async with host.events() as stream: async for kind, data in stream``."""
        send, receive = anyio.create_memory_object_stream[tuple[str, dict[str, Any]]](512)
        self._subscribers.add(send)
        try:
            yield receive
        finally:
            self._subscribers.discard(send)
            send.close()
            receive.close()

    # ------------------------------------------------------------------ listings
    async def _each(
        self, fn: Callable[[ServerConnection], Awaitable[T]], capability: str | None = None
    ) -> list[tuple[str, T]]:
        """``fn`` on every ready server (that declared ``capability``, when given: a server
        without ``prompts`` is not asked for them); a failing server is skipped, not fatal."""
        out: list[tuple[str, T]] = []
        for name, conn in list(self.servers.items()):
            if conn.state != "ready":
                continue
            declared = conn.info.capabilities if conn.info else {}
            if capability is not None and capability not in (declared or {}):
                continue
            try:
                out.append((name, await fn(conn)))
            except Exception as exc:
                log.warning("server %s: %s", name, exc)
        return out

    async def list_tools(self, *, refresh: bool = False) -> list[HostTool]:
        """Every ready server's tools, namespaced (served from each client's ttl cache)."""

        async def tools(conn: ServerConnection) -> list[dict[str, Any]]:
            listed = await conn.use(lambda c: c.list_tools(refresh=refresh))
            # On HTTP the client drops tools with invalid x-mcp-header annotations (the
            # spec's MUST); keep why, so a person can see what is missing.
            self.dropped[conn.name] = dict(conn.client.dropped_tools) if conn.client else {}
            return [dict(t) for t in listed]

        self._index = ToolIndex.build(await self._each(tools))
        return list(self._index.tools.values())

    async def model_tools(self) -> list[HostTool]:
        """The tools offered to the model: visible to it, and not denied by the policy (a
        denied tool could never run, so listing it would only spend the model's context)."""
        return [
            t
            for t in await self.list_tools()
            if t.for_model
            and self.policy.permission(t.server, t.qualified_name) is not Permission.DENY
        ]

    def instructions(self) -> list[tuple[str, str]]:
        """``(server, instructions)`` of every ready server that sent some."""
        out = []
        for name, conn in self.servers.items():
            text = conn.info.instructions if conn.info and conn.state == "ready" else None
            if isinstance(text, str) and text.strip():
                out.append((name, text.strip()))
        return out

    def tool(self, qualified_name: str) -> HostTool | None:
        """The tool exposed as ``qualified_name`` (``server__tool``), as the last listing showed."""
        return self._index.get(qualified_name)

    def qualified(self, server: str, tool: str, *, for_app: bool = False) -> str | None:
        """The exposed name of ``server``'s ``tool`` (as of the last :meth:`list_tools`).
        ``for_app``: the name comes from one of ``server``'s MCP Apps, which may call its
        own tool by its unprefixed name behind a gateway (:meth:`ToolIndex.find_for_app`)."""
        index = self._index
        found = index.find_for_app(server, tool) if for_app else index.find(server, tool)
        return found.qualified_name if found else None

    async def list_resources(self) -> list[tuple[str, dict[str, Any]]]:
        """Every server's resources, as ``(server name, resource)`` pairs."""
        found = await self._each(lambda conn: conn.use(lambda c: c.list_resources()), "resources")
        return [(name, dict(r)) for name, items in found for r in items]

    async def list_resource_templates(self) -> list[tuple[str, dict[str, Any]]]:
        """Every server's resource templates, as ``(server name, template)`` pairs."""
        found = await self._each(
            lambda conn: conn.use(lambda c: c.list_resource_templates()), "resources"
        )
        return [(name, dict(r)) for name, items in found for r in items]

    async def list_prompts(self) -> list[tuple[str, dict[str, Any]]]:
        """Every server's prompts, as ``(server name, prompt)`` pairs."""
        found = await self._each(lambda conn: conn.use(lambda c: c.list_prompts()), "prompts")
        return [(name, dict(p)) for name, items in found for p in items]

    async def read_resource(self, server: str, uri: str) -> ReadResourceResult:
        """Read ``uri`` from the server named ``server``."""
        return await self.connection(server).use(lambda c: c.read_resource(uri))

    async def get_prompt(
        self, server: str, name: str, arguments: Mapping[str, str] | None = None
    ) -> GetPromptResult:
        """Get prompt ``name`` from the server named ``server`` with ``arguments``."""
        return await self.connection(server).use(lambda c: c.get_prompt(name, arguments))

    async def complete_prompt_argument(
        self,
        server: str,
        prompt: str,
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Suggestions for one argument of ``server``'s prompt (``completion/complete``);
        empty when the server offers no completions."""
        conn = self.connection(server)
        caps = conn.info.capabilities if conn.info else {}
        if "completions" not in caps:
            return []
        ref = {"type": "ref/prompt", "name": prompt}
        result = await conn.use(
            lambda c: c.complete(ref, argument, value, context_arguments=context or None)
        )
        return [str(v) for v in result["completion"]["values"]][:100]

    async def read_app(self, server: str, uri: str) -> AppDocument:
        """A tool's MCP App view, with its CSP, ready for a sandboxed iframe.  When the view
        asks to connect to this machine or a private network, the person is asked, shown
        the addresses; refused, the view opens without them."""
        result = await self.read_resource(server, uri)
        doc = prepare_app(uri, result)
        if not doc.withheld:
            return doc
        key = (server, uri, doc.withheld)
        if key not in self._granted_connect:
            try:
                remember = await authorize_app_action(
                    self,
                    server,
                    "ui/connect",
                    {"view": uri, "addresses": list(doc.withheld)},
                    "The app view asks to connect to these addresses on this machine or "
                    "your private network (a router, a local service, the cloud metadata "
                    "address 169.254.169.254). Refuse unless you expect it.",
                    audit_kind="app-connect",
                    always_ask=True,
                )
            except ToolDenied:
                return doc  # the view opens, without those addresses
            if remember:
                self._granted_connect.add(key)
        return prepare_app(uri, result, granted=doc.withheld)

    # ------------------------------------------------------------------ tool calls
    async def call_tool(
        self,
        qualified_name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        origin: str = "model",
        app_server: str | None = None,
        on_progress: Callable[[dict[str, Any]], Any] | None = None,
        call_id: str | None = None,
    ) -> CallToolResult:
        """Authorize and run one tool call; raises :class:`ToolDenied` when refused and
        :class:`ToolCancelled` when ``call_id`` was passed to :meth:`cancel_call`."""
        args = dict(arguments or {})
        tool = self._index.get(qualified_name)
        if tool is None:
            await self.list_tools()
            tool = self._index.get(qualified_name)
        if tool is None:
            raise ToolDenied(qualified_name, "no such tool")
        check_caller(self, tool, origin, app_server)
        by = await authorize_tool(self, tool, args, origin)
        # The call may run: a page shows the tool's view only from here (never before
        # the person agreed, and never for a call refused).
        self.emit(
            "authorized",
            {
                "callId": call_id,
                "server": tool.server,
                "tool": qualified_name,
                "decision": by[0],
                "by": by[1],
            },
        )
        conn = self.connection(tool.server)
        started = time.monotonic()

        async def progress(params: dict[str, Any]) -> None:
            self.emit("progress", {"server": tool.server, "tool": qualified_name, **params})
            if on_progress is not None:
                outcome = on_progress(params)
                if hasattr(outcome, "__await__"):
                    await outcome

        def task_status(record: dict[str, Any]) -> None:
            # A task-backed call: its status is shown while it runs (web page, terminal).
            self.emit(
                "task",
                {
                    "server": tool.server,
                    "tool": qualified_name,
                    "taskId": record.get("taskId"),
                    "status": record.get("status"),
                    "message": record.get("statusMessage"),
                },
            )

        scope = anyio.CancelScope()
        if call_id is not None:
            self._running[call_id] = scope
        result: CallToolResult | None = None
        try:
            with scope:  # cancelling it makes the client tell the server
                result = await conn.use(
                    lambda c: c.call_tool(
                        tool.name, args, on_progress=progress, on_task=task_status
                    )
                )
        except Exception as exc:
            self._record(tool, origin, by, args, f"error: {exc}", started)
            raise
        finally:
            if call_id is not None:
                self._running.pop(call_id, None)
        if result is None:  # the scope was cancelled by cancel_call, not from outside
            self._record(tool, origin, by, args, "cancelled", started)
            raise ToolCancelled(qualified_name)
        self._record(
            tool, origin, by, args, "tool-error" if result.get("isError") else "ok", started
        )
        return result

    def cancel_call(self, call_id: str) -> bool:
        """Cancel a running call started with this ``call_id``; False if none is running."""
        scope = self._running.get(call_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    def _record(
        self,
        tool: HostTool,
        origin: str,
        by: tuple[str, str],
        args: dict[str, Any],
        outcome: str,
        started: float,
    ) -> None:
        self.audit.record(
            "tool",
            tool.server,
            tool.qualified_name,
            origin=origin,
            decision=by[0],
            by=by[1],
            arguments=args,
            outcome=outcome,
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )

    async def authorize_app_message(self, server: str, role: str, text: str) -> None:
        """An MCP App view of ``server`` wants to add a message to the conversation
        (``ui/message``).  The server's permission decides, as for its tools: ``deny``
        refuses, ``ask`` asks the person with the message shown; raises
        :class:`ToolDenied` when refused."""
        await authorize_app_action(
            self,
            server,
            "ui/message",
            {"role": role, "text": text},
            "The app wants to add this message to the conversation (the model will read it).",
            audit_kind="app-message",
        )

    async def authorize_open_link(self, server: str, url: str) -> None:
        """An MCP App view of ``server`` wants to open ``url`` (``ui/open-link``): the
        person is always asked, shown the address (unless the server is denied); the
        answer is audited.  Raises :class:`ToolDenied` when refused."""
        await authorize_app_action(
            self,
            server,
            "ui/open-link",
            {"url": url},
            "The app wants to open this address in a new browser tab. Check it first.",
            audit_kind="open-link",
            always_ask=True,
        )

    def extension_of(self, server: str, method: str) -> str | None:
        """The extension ``server`` declares (``capabilities.extensions``) that ``method``
        belongs to (the method's name starts with the extension's id and ``/``); None
        when it declares none that holds it."""
        conn = self.connection(server)
        extensions = conn.info.capabilities.get("extensions") if conn.info else None
        if not isinstance(extensions, dict):
            return None
        return next((e for e in extensions if method.startswith(f"{e}/")), None)

    async def call_extension_method(
        self, server: str, method: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """An MCP App view of ``server`` calls ``method``, a custom request of one of the
        server's declared extensions, through the host: the server's permission decides as
        for its tools (``ask``: the person is asked, shown the method and its params),
        audited.  ``ValueError`` when the server declares no extension holding ``method``
        (a view reaches nothing else this way); :class:`ToolDenied` when refused."""
        extension = self.extension_of(server, method)
        if extension is None:
            raise ValueError(f"server {server!r} declares no extension with a method {method!r}")
        await authorize_app_action(
            self,
            server,
            method,
            dict(params or {}),
            f"The app wants to call {method}, a method of the server's extension {extension}.",
            audit_kind="extension",
        )
        return await self.connection(server).use(lambda c: c.request(method, dict(params or {})))
