"""Custom methods: the requests and notifications an extension adds to MCP.

``@server.method("com.example/notes/search")`` registers a request, and
``@server.notification_handler("com.example/notes/touched")`` a notification from the
client.  Each belongs to an extension, declared under ``capabilities.extensions`` (key:
the extension identifier, ``_meta`` key rules with a mandatory prefix; value: its settings
object; 2026-07-28 only: 2025-11-25 has no such capability, and its clients call the
methods all the same).  Params are checked against the function's type hints with the
machinery tools use; the result is the function's return value, dumped to JSON by its
return annotation.

A registered method is a method of the server like any other: dispatch finds it in the
server's table, the middleware chain wraps it, and the transports' method checks accept it
(``Server.custom_specs``).  A method nobody registered still answers -32601.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..types.errors import INTERNAL_ERROR, McpError, invalid_params
from ..types.methods import METHODS, MethodSpec, custom_method
from .handlers import with_input
from .registry import call_maybe_async
from .schema import ArgumentModel, output_schema_for, validation_error

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from .context import Context

Fn = Callable[..., object]

#: ``_meta`` key rules: an optional prefix of dot-separated labels ending in ``/`` (for an
#: extension identifier it is mandatory), then a name of letters, digits, ``-._``.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_EXTENSION_ID = re.compile(rf"(?:{_LABEL}\.)*{_LABEL}/{_NAME}")
_METHOD_NAME = re.compile(r"[A-Za-z0-9._/-]+")


def check_extension_id(extension: str) -> str:
    """``extension`` if it is a valid identifier (``com.example/notes``), else ValueError."""
    if not isinstance(extension, str) or not _EXTENSION_ID.fullmatch(extension):
        raise ValueError(
            f"extension identifier {extension!r} must be a prefix and a name, "
            "like 'com.example/notes' (the _meta key rules, prefix mandatory)"
        )
    return extension


def extension_of(method: str, extension: str | None) -> str:
    """The extension ``method`` belongs to: ``extension`` when given, else the method's
    first two segments (``com.example/notes/search`` -> ``com.example/notes``)."""
    if extension is None:
        extension = "/".join(method.split("/")[:2])
        if not _EXTENSION_ID.fullmatch(extension):
            raise ValueError(
                f"cannot derive an extension identifier from method {method!r}: "
                "name it with extension='com.example/thing'"
            )
    return check_extension_id(extension)


def check_method_name(method: str) -> str:
    """A custom method's name: non-empty, not a built-in MCP method, not JSON-RPC's
    reserved ``rpc.`` names; raises ValueError otherwise."""
    if not isinstance(method, str) or not _METHOD_NAME.fullmatch(method):
        raise ValueError(f"method name {method!r} must be letters, digits and '._/-'")
    if method in METHODS:
        raise ValueError(f"{method!r} is a method of MCP itself; a custom method needs a new name")
    if method.startswith("rpc."):
        raise ValueError(f"{method!r}: names starting with 'rpc.' are reserved by JSON-RPC")
    return method


@dataclass(slots=True)
class MethodEntry:
    """One custom request or client notification: its function and how to call it."""

    name: str
    extension: str
    spec: MethodSpec
    fn: Fn
    arguments: ArgumentModel
    #: The return annotation's adapter (None: the value must already be a JSON object).
    output_adapter: TypeAdapter[Any] | None

    async def call(self, ctx: Context) -> dict[str, Any]:
        """Run the function with the request's params; its value as the result object.
        On 2026-07-28 a function that asks for input (``ctx.elicit``...) answers with an
        ``InputRequiredResult``, and the retry carrying the answers runs it again, as for
        a tool; on 2025-11-25 the client is asked with a request, as for a tool."""
        kwargs = self.kwargs(ctx)

        async def run() -> dict[str, Any]:
            if inspect.iscoroutinefunction(self.fn):
                value = await call_maybe_async(self.fn, kwargs)
            else:  # a plain def may block: a worker thread, as for tools
                value = await anyio.to_thread.run_sync(
                    functools.partial(self.fn, **kwargs), abandon_on_cancel=True
                )
            return self.result_from(value)

        return await with_input(ctx.server, ctx, self.name, run)

    def kwargs(self, ctx: Context) -> dict[str, Any]:
        """The function's keyword arguments: the params (``_meta`` aside) checked against
        its type hints (-32602 naming the problems), and the Context if it takes one."""
        params = {k: v for k, v in ctx.params.items() if k != "_meta"}
        try:
            kwargs = self.arguments.validate(params)
        except validation_error() as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err.get('loc', ())) or 'params'}: {err.get('msg')}"
                for err in exc.errors()[:5]
            )
            raise invalid_params(f"Invalid params for {self.name}: {problems}") from None
        if self.arguments.context_param:
            kwargs[self.arguments.context_param] = ctx
        return kwargs

    def result_from(self, value: object) -> dict[str, Any]:
        """The JSON-RPC result: ``{}`` for None, else the value dumped by its annotation;
        a value that is not a JSON object (or breaks its annotation) is a server bug."""
        if value is None:
            return {}
        if self.output_adapter is not None:
            try:
                value = self.output_adapter.dump_python(
                    self.output_adapter.validate_python(value), mode="json"
                )
            except validation_error() as exc:
                raise McpError(
                    INTERNAL_ERROR,
                    f"{self.name} returned a value that does not match its return type: "
                    f"{exc.errors()[0].get('msg')}",
                ) from None
        if not isinstance(value, dict):
            raise McpError(
                INTERNAL_ERROR, f"{self.name} must return a JSON object (a dict), not {type(value)}"
            )
        return value


def make_method(
    fn: Fn, context_type: type, name: str, extension: str | None, notification: bool
) -> MethodEntry:
    """The entry ``Server.method`` (or ``notification_handler``) registers for ``fn``."""
    check_method_name(name)
    ext = extension_of(name, extension)
    arguments = ArgumentModel(fn, context_type, title=name.replace("/", "_").title())
    adapter = None
    if not notification:
        _, _, adapter = output_schema_for(fn, hints=arguments.hints)
    return MethodEntry(
        name=name,
        extension=ext,
        spec=custom_method(name, notification=notification),
        fn=fn,
        arguments=arguments,
        output_adapter=adapter,
    )


def notification_step(entry: MethodEntry) -> Callable[[Context], Awaitable[dict[str, Any]]]:
    """The innermost step of a custom notification's middleware chain: run its handler.
    Nothing is answered, so bad params are logged by the caller, never sent."""

    async def run(ctx: Context) -> dict[str, Any]:
        await entry.call(ctx)
        return {}

    return run


def declared(
    extensions: Mapping[str, dict[str, Any]], entries: Mapping[str, MethodEntry]
) -> dict[str, dict[str, Any]]:
    """``capabilities.extensions``: every declared extension with its settings, and every
    extension a registered method belongs to (``{}``: supported, no settings)."""
    out: dict[str, dict[str, Any]] = {entry.extension: {} for entry in entries.values()}
    out.update(extensions)
    return out
