"""Custom methods through the gateway: an extension's requests, forwarded per upstream.

The wire never lists an extension's methods, so the gateway learns them from its file:
``[[upstream]] methods = ["vendor/thing"]`` names each, ``extensions = ["com.example/notes"]``
takes any method under that identifier.  Each becomes a method of the front (a
:func:`~mcpkit.types.methods.custom_method` row in ``custom_specs``, so the transports
accept it in both eras) whose handler forwards the params as they are with the upstream
client's :meth:`~mcpkit.client.Client.request`, inside the gateway's policy point: the
same audit, ``[[rule]]`` decision and rate limits as a built-in method.  A custom method
has no name member, so rules and limits match it on its method (``methods = [...]``).

A method under a configured extension is added on its first call (the transports ask
``custom_specs`` before dispatch); an explicitly named method is added at start.

A notification the upstream sends on a forwarded request's own stream (Streamable HTTP:
the request's response stream), of a method its ``methods`` or ``extensions`` name,
reaches the caller of that request, on that caller's request stream: it is read inside the
forwarding task, which knows its caller (:data:`_forwarding`).  A notification read
anywhere else (a stdio upstream's one pipe, a session's GET stream) belongs to no request
the gateway can name, and is passed to nobody.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..server.extensions import extension_of
from ..server.middleware import wrap
from ..transports.client_base import ServerError
from ..types.errors import McpError, method_not_found
from ..types.methods import METHODS, MethodSpec, custom_method
from ..types.versions import META_SERVER_INFO
from .middleware import policy

if TYPE_CHECKING:
    from ..client import Client
    from ..compose.replicas import AnyUpstream
    from ..server.context import Context
    from .server import GatewayServer


#: The front request a forwarding task is answering (see the module's notes).
_forwarding: ContextVar[Context | None] = ContextVar("mcpkit_gateway_forwarding", default=None)
#: The upstream connections whose notifications are tapped for relay (once each).
_tapped: weakref.WeakSet[Client] = weakref.WeakSet()


class CustomSpecs(dict[str, MethodSpec]):
    """The front's ``custom_specs``: the configured methods, and on a lookup of a method
    under a configured extension identifier, that method's row and forwarding handler,
    added then (``get`` is what the transports and dispatch ask)."""

    def __init__(self, gateway: GatewayServer) -> None:
        super().__init__()
        self.gateway = gateway
        #: ``identifier + "/"`` -> the name of the upstream serving every method under it.
        self.prefixes: dict[str, str] = {}

    def get(self, method: str, default: Any = None) -> Any:
        spec = super().get(method)
        if spec is None and self.prefixes and method not in METHODS:
            upstream = self.owner(method)
            if upstream is not None:
                add_forwarded(self.gateway, method, upstream)
                return super().get(method)
        return default if spec is None else spec

    def owner(self, method: str) -> str | None:
        """The upstream configured for the extension ``method`` belongs to, if any."""
        for prefix, upstream in self.prefixes.items():
            if method.startswith(prefix) and len(method) > len(prefix):
                return upstream
        return None


def install(gateway: GatewayServer) -> None:
    """The front's custom methods as the gateway's file names them (each upstream's
    ``methods`` and ``extensions``), replacing those of a previous file (a reload)."""
    old = gateway.custom_specs
    specs = CustomSpecs(gateway)
    gateway.custom_specs = specs
    gateway.drop_routes(list(old))
    for config in gateway.config.upstreams:
        for identifier in config.extensions:
            specs.prefixes[identifier + "/"] = config.name
        for method in config.methods:
            add_forwarded(gateway, method, config.name)
    if specs.prefixes and not getattr(gateway.dispatch, "resolves_extensions", False):
        gateway.dispatch = resolving(gateway, gateway.dispatch)  # type: ignore[method-assign]


def resolving(gateway: GatewayServer, dispatch: Callable[..., Any]) -> Callable[..., Any]:
    """``dispatch`` adding a configured extension's method on its first request (the
    modern transports ask ``custom_specs`` first; a 2025-11-25 session goes straight to
    dispatch).  Installed once the file names ``extensions``."""

    def dispatch_resolving(message: Any, meta: Any, exchange: Any, **options: Any) -> Any:
        gateway.custom_specs.get(message["method"])
        return dispatch(message, meta, exchange, **options)

    dispatch_resolving.resolves_extensions = True  # type: ignore[attr-defined]
    return dispatch_resolving


def add_forwarded(gateway: GatewayServer, method: str, upstream: str) -> None:
    """Make ``method`` a request of the front forwarded to the upstream named
    ``upstream``, under the policy point (the layers of every routed method) and the
    operator's middleware."""
    dict.__setitem__(gateway.custom_specs, method, custom_method(method))
    gateway.add_route(method, wrap(forwarder(gateway, upstream), method, policy(gateway)))


def forwarder(gateway: GatewayServer, name: str) -> Callable[[Context], Any]:
    """The handler forwarding a custom request to the upstream ``name`` (the one serving
    now: a reload may have replaced it): its params as the caller sent them (the front's
    ``_meta`` left out: the upstream client sends its own), its result or error as the
    upstream answered."""

    async def forward(ctx: Context) -> dict[str, Any]:
        upstream = next((u for u in gateway.upstreams if u.name == name), None)
        if upstream is None:
            raise method_not_found(ctx.method)
        params = {k: v for k, v in ctx.params.items() if k != "_meta"}

        async def send(client: Client) -> dict[str, Any]:
            _tap(gateway, client, name)
            caller = _forwarding.set(ctx)
            try:
                return await client.request(ctx.method, params)
            finally:
                _forwarding.reset(caller)

        try:
            return as_front(await upstream.call(send))
        except ServerError as exc:
            raise McpError(exc.code, exc.message, exc.data) from None

    return forward


def _tap(gateway: GatewayServer, client: Client, name: str) -> None:
    """Relay the extension notifications of the upstream ``name``'s connection
    ``client`` to the caller whose forwarded request they belong to."""
    if client in _tapped:
        return
    _tapped.add(client)

    async def relay(method: str, params: dict[str, Any]) -> None:
        ctx = _forwarding.get()
        if ctx is None or not _declared(gateway, name, method):
            return
        await ctx.notify(method, {k: v for k, v in params.items() if k != "_meta"})

    client.tap_notifications(relay)


def _declared(gateway: GatewayServer, name: str, method: str) -> bool:
    """Whether the file names ``method`` for the upstream ``name`` (in its ``methods``,
    or under one of its ``extensions``), and it is no method of MCP itself."""
    if method in METHODS:
        return False
    config = next((u for u in gateway.config.upstreams if u.name == name), None)
    if config is None:
        return False
    return method in config.methods or any(
        method.startswith(identifier + "/") for identifier in config.extensions
    )


def as_front(result: dict[str, Any]) -> dict[str, Any]:
    """An upstream's answer as the front's: its ``resultType`` and its ``serverInfo``
    left out (the front's own are set on the way out), the rest as it is."""
    result.pop("resultType", None)
    meta = result.get("_meta")
    if isinstance(meta, dict) and META_SERVER_INFO in meta:
        rest = {k: v for k, v in meta.items() if k != META_SERVER_INFO}
        if rest:
            result["_meta"] = rest
        else:
            del result["_meta"]
    return result


def declared_extensions(gateway: GatewayServer) -> dict[str, dict[str, Any]]:
    """``capabilities.extensions`` for the forwarded methods: every configured identifier
    and the identifier of every configured method, with the settings its upstream
    declares (``{}`` when it declares none, as a 2025-11-25 upstream cannot)."""
    out: dict[str, dict[str, Any]] = {}
    by_name = {u.name: u for u in gateway.upstreams}
    for config in gateway.config.upstreams:
        upstream = by_name.get(config.name)
        if upstream is None:
            continue
        theirs = _upstream_extensions(upstream)
        identifiers = list(config.extensions)
        for method in config.methods:
            try:
                identifiers.append(extension_of(method, None))
            except ValueError:
                continue  # (a method outside any identifier-shaped name: nothing to declare)
        for identifier in identifiers:
            settings = theirs.get(identifier)
            out[identifier] = dict(settings) if isinstance(settings, Mapping) else {}
    return out


def _upstream_extensions(upstream: AnyUpstream) -> Mapping[str, Any]:
    try:
        extensions = upstream.capabilities.get("extensions")
    except McpError:
        return {}
    return extensions if isinstance(extensions, Mapping) else {}
