"""One client over several servers: what :meth:`Client.from_config` returns.

::

    async with Client.from_config("mcp.json") as client:
        tools = await client.list_tools()                        # "files__read", "math__add"
        await client.call_tool("math__add", {"a": 1, "b": 2})
        await client.read_resource("data://files/readme")       # data://readme on "files"

It is a view, not a new protocol path: each server gets its own ordinary :class:`Client`
(so each keeps its own era, session, cache and callbacks), and this class only names things
so that one flat list can hold them all and every name leads back to one server.  The
names are the host's (:mod:`mcpkit.protocol.naming`): tools and prompts become
``server__name``, resource URIs gain the server as their first segment
(``data://readme`` -> ``data://files/readme``, templates alike).  They are namespaced
even with a single server, so adding a second one never renames the first one's tools.

Servers are started together; if any fails, the others are closed again and the error
names each server that failed and what it ran.  A server that dies later makes only its
own calls fail (a :class:`~mcpkit.client.TransportError`); restarting it is a host's job.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeVar, cast

import anyio
import anyio.abc

from ..protocol.naming import exposed_name, namespace_uri, strip_uri
from .client import Client
from .config import (
    ConfigError,
    ServerConfig,
    check_name,
    client_options,
    parse_server,
    read_config,
    server_entries,
)
from .errors import ClientError, ConnectError
from .models import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

__all__ = ["ClientGroup"]

log = logging.getLogger("mcpkit.client")
T = TypeVar("T")


class ClientGroup:
    """Several servers behind one client-like object (see the module docstring)."""

    def __init__(
        self, clients: Mapping[str, Client], described: Mapping[str, str] | None = None
    ) -> None:
        if not clients:
            raise ConfigError("no servers to connect to (mcpServers is empty or all disabled)")
        #: One ordinary client per server, by the server's name in the configuration.
        self.clients: dict[str, Client] = dict(clients)
        self._described = dict(described or {})
        self._tools: dict[str, tuple[str, str]] = {}
        self._prompts: dict[str, tuple[str, str]] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._stop = anyio.Event()

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | str | os.PathLike[str], **options: Any
    ) -> ClientGroup:
        """A group for an ``mcpServers`` configuration: a dict or the path of a JSON file.

        Each entry is parsed as the host parses it (:mod:`mcpkit.client.config`); in a dict
        an entry may also be anything :class:`Client` accepts (a ``Server`` object for an
        in-memory server, a URL, a command) or a ready :class:`Client`.  ``options`` go to
        every server's :class:`Client` (callbacks, ``ClientOptions`` fields) and win over
        an entry's own ``timeout`` and ``era``."""
        data = read_config(config) if isinstance(config, (str, os.PathLike)) else config
        clients: dict[str, Client] = {}
        described: dict[str, str] = {}
        for name, item in server_entries(dict(data)).items():
            if isinstance(item, Mapping):
                entry: ServerConfig = parse_server(name, dict(item))
                if entry.disabled:
                    continue
                clients[name] = Client(entry.target(), **{**client_options(entry), **options})
                described[name] = entry.describe()
                continue
            check_name(name)
            clients[name] = item if isinstance(item, Client) else Client(item, **options)
            described[name] = (
                item
                if isinstance(item, str)
                else f"in memory: {getattr(item, 'name', type(item).__name__)}"
            )
        return cls(clients, described)

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> ClientGroup:
        if self._tg is not None:
            raise RuntimeError("already connected")
        tg = self._tg = anyio.create_task_group()
        await tg.__aenter__()
        failed: dict[str, Exception] = {}

        async def start(name: str, client: Client) -> None:
            try:
                await tg.start(self._keep, name, client)
            except Exception as exc:
                failed[name] = exc

        try:
            async with anyio.create_task_group() as starting:
                for name, client in self.clients.items():
                    starting.start_soon(start, name, client)
        except BaseException:
            await self.aclose()
            raise
        if failed:
            await self.aclose()
            reasons = "; ".join(
                f"server {name!r} ({self._described.get(name, '?')}) failed to start: {exc}"
                for name, exc in failed.items()
            )
            raise ConnectError(reasons)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _keep(
        self, name: str, client: Client, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        """Hold ``client`` open in a task of the group's own (its transport's task group
        is entered and left here) until :meth:`aclose`."""
        started = False
        try:
            async with client:
                started = True
                task_status.started()
                await self._stop.wait()
        except Exception as exc:
            if not started:
                raise
            # One server going away must not take the others with it.
            log.warning("server %s: %s", name, exc)

    async def aclose(self) -> None:
        """Disconnect every server (done by ``async with``)."""
        tg, self._tg = self._tg, None
        if tg is not None:
            self._stop.set()
            await tg.__aexit__(None, None, None)
            self._stop = anyio.Event()

    # ------------------------------------------------------------------ plumbing
    def client(self, server: str) -> Client:
        """The :class:`Client` of one server, for what the group does not namespace."""
        try:
            return self.clients[server]
        except KeyError:
            raise ClientError(
                f"no server named {server!r} (servers: {', '.join(self.clients)})"
            ) from None

    async def _each(
        self, fn: Callable[[Client], Awaitable[T]], capability: str | None = None
    ) -> list[tuple[str, T]]:
        """``fn`` on every server at once (those that declare ``capability``, when given),
        in configuration order; a failure names its server (a note on the original
        exception, whose type is kept)."""
        found: dict[str, T] = {}

        async def one(name: str, client: Client) -> None:
            try:
                found[name] = await fn(client)
            except Exception as exc:
                exc.add_note(f"(from server {name!r})")
                raise

        try:
            async with anyio.create_task_group() as tg:
                for name, client in self.clients.items():
                    if capability is None or capability in client.server_info.capabilities:
                        tg.start_soon(one, name, client)
        except BaseExceptionGroup as group:
            first = group.exceptions[0]
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        return [(name, found[name]) for name in self.clients if name in found]

    @staticmethod
    def _index(
        listings: list[tuple[str, list[Any]]], key: str
    ) -> tuple[dict[str, tuple[str, str]], list[Any]]:
        index: dict[str, tuple[str, str]] = {}
        items: list[Any] = []
        for server, listed in listings:
            for item in listed:
                exposed = exposed_name(server, item[key], index.keys())
                index[exposed] = (server, item[key])
                items.append({**item, key: exposed})
        return index, items

    def _unknown(self, kind: str, name: str) -> ClientError:
        server, sep, _ = name.partition("__")
        if sep and server not in self.clients:
            where = f"there is no server named {server!r}"
        elif sep:
            where = f"server {server!r} has none by that name"
        else:
            where = f"{kind} names here are server__name"
        return ClientError(
            f"no {kind} named {name!r}: {where} (servers: {', '.join(self.clients)})"
        )

    # ------------------------------------------------------------------ tools
    async def list_tools(self, *, refresh: bool = False) -> list[Tool]:
        """Every server's tools, named ``server__tool``."""
        listings = await self._each(lambda c: c.list_tools(refresh=refresh), "tools")
        self._tools, items = self._index(cast(list[tuple[str, list[Any]]], listings), "name")
        return cast(list[Tool], items)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> CallToolResult:
        """Call ``server__tool`` on its server (``kwargs`` as :meth:`Client.call_tool`)."""
        server, tool = await self._locate("tool", name)
        return await self.clients[server].call_tool(tool, arguments, **kwargs)

    # ------------------------------------------------------------------ prompts
    async def list_prompts(self, *, refresh: bool = False) -> list[Prompt]:
        """Every server's prompts, named ``server__prompt``."""
        listings = await self._each(lambda c: c.list_prompts(refresh=refresh), "prompts")
        self._prompts, items = self._index(cast(list[tuple[str, list[Any]]], listings), "name")
        return cast(list[Prompt], items)

    async def _locate(self, kind: Literal["tool", "prompt"], name: str) -> tuple[str, str]:
        """The server and its own name for a namespaced tool or prompt; an unknown name
        lists once more first (a server may have added it since)."""

        def index() -> dict[str, tuple[str, str]]:
            return self._tools if kind == "tool" else self._prompts

        if name not in index():
            await (self.list_tools() if kind == "tool" else self.list_prompts())
        found = index().get(name)
        if found is None:
            raise self._unknown(kind, name)
        return found

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, **kwargs: Any
    ) -> GetPromptResult:
        """Get ``server__prompt`` from its server (``kwargs`` as :meth:`Client.get_prompt`)."""
        server, prompt = await self._locate("prompt", name)
        return await self.clients[server].get_prompt(prompt, arguments, **kwargs)

    # ------------------------------------------------------------------ resources
    def _namespaced(self, listings: list[tuple[str, list[Any]]], key: str) -> list[Any]:
        return [
            {**item, key: namespace_uri(server, item[key])}
            for server, listed in listings
            for item in listed
        ]

    async def list_resources(self, *, refresh: bool = False) -> list[Resource]:
        """Every server's resources, each URI with its server as the first segment."""
        listings = await self._each(lambda c: c.list_resources(refresh=refresh), "resources")
        return cast(
            list[Resource], self._namespaced(cast(list[tuple[str, list[Any]]], listings), "uri")
        )

    async def list_resource_templates(self, *, refresh: bool = False) -> list[ResourceTemplate]:
        """Every server's resource templates, namespaced like resource URIs."""
        listings = await self._each(
            lambda c: c.list_resource_templates(refresh=refresh), "resources"
        )
        return cast(
            list[ResourceTemplate],
            self._namespaced(cast(list[tuple[str, list[Any]]], listings), "uriTemplate"),
        )

    def route_uri(self, uri: str) -> tuple[str, str]:
        """``(server, the server's own URI)`` for a namespaced URI."""
        for server in self.clients:
            inner = strip_uri(server, uri)
            if inner is not None:
                return server, inner
        raise ClientError(
            f"resource URI {uri!r} names no server: URIs here carry the "
            f"server first, as in data://SERVER/path (servers: "
            f"{', '.join(self.clients)})"
        )

    async def read_resource(self, uri: str, **kwargs: Any) -> ReadResourceResult:
        """Read a namespaced URI from its server; the contents keep the server's own URIs."""
        server, inner = self.route_uri(uri)
        return await self.clients[server].read_resource(inner, **kwargs)

    # ------------------------------------------------------------------ the rest
    async def complete(
        self, ref: Mapping[str, Any], argument: str, value: str, **kwargs: Any
    ) -> CompleteResult:
        """``completion/complete`` for a namespaced prompt or resource template."""
        if ref.get("type") == "ref/prompt":
            server, prompt = await self._locate("prompt", str(ref.get("name")))
            inner = {**ref, "name": prompt}
        else:
            server, uri = self.route_uri(str(ref.get("uri")))
            inner = {**ref, "uri": uri}
        return await self.clients[server].complete(inner, argument, value, **kwargs)

    async def ping(self) -> None:
        """Check every server is alive."""
        await self._each(lambda c: c.ping())
