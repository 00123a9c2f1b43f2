"""One coroutine per MCP method.  Each takes the request Context and returns the result
dict; errors are raised as :class:`McpError` and shaped by the transport."""

from __future__ import annotations

import base64
import binascii
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.sealing import InvalidState
from ..runtime.threads import run_sync
from ..types.errors import LEGACY_RESOURCE_NOT_FOUND, McpError, invalid_params, object_param
from .context import Context
from .mrtr import (
    InputRound,
    NeedInput,
    input_required_result,
    opened_payload,
    sealed_payload,
)
from .registry import PLAIN_RESULTS, ToolEntry, ToolError, call_maybe_async, resource_contents
from .schema import validation_error

if TYPE_CHECKING:
    from pydantic import ValidationError

    from .server import Server

Handler = Callable[[Context], Awaitable[dict[str, Any]]]
#: A registry's entries as (name, tags, wire form), for the list handlers (consumed only
#: when the list is built).
Entries = Iterable[tuple[str, frozenset[str], dict[str, Any]]]


def table(server: Server) -> dict[str, Handler]:
    async def discover(ctx: Context) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(server.modern_versions + server.legacy_versions),
            "capabilities": server.capabilities("modern"),
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return _cacheable(server, ctx, result)

    vis = server.visibility

    def listed(ctx: Context, kind: str, cache: str, entries: Entries) -> list[dict[str, Any]]:
        """The wire forms of ``entries`` (name, tags, wire) this request may see: the
        server's cached list, or with a request filter the list filtered for ``ctx``."""
        if vis.filter is None:
            return server.cached_list(cache, lambda: [w for n, t, w in entries if vis.shown(n, t)])
        return [w for n, t, w in entries if vis.allows(ctx, kind, n, t)]

    async def tools_list(ctx: Context) -> dict[str, Any]:
        tools = server.tools.values()
        items = listed(ctx, "tool", "tools", ((t.name, t.tags, t.wire) for t in tools))
        page = _page(server, ctx, "tools", items)
        if ctx.meta.era == "legacy" and server._task_tools:
            from .task_eras import with_task_support

            support = {t.name: t.task_support for t in server.tools.values()}
            page = {**page, "tools": with_task_support(page["tools"], support)}
        return page

    async def tools_call(ctx: Context) -> dict[str, Any]:
        params = ctx.params
        name = params.get("name")
        if not isinstance(name, str):
            raise invalid_params("tools/call requires a string name")
        tool = server.tools.get(name)
        if tool is None or (vis.active and not vis.allows(ctx, "tool", name, tool.tags)):
            raise invalid_params(f"Unknown tool: {name}", {"name": name})
        arguments = object_param(params, "arguments", "tools/call arguments must be an object")
        try:
            if tool.arguments is not None:
                kwargs = tool.arguments.validate(arguments)
            else:
                kwargs = tool.explicit_arguments(arguments)
        except validation_error() as exc:
            return _tool_error(f"Invalid arguments for tool {name}: {_short(exc)}")
        except ToolError as exc:
            return _tool_error(str(exc))
        if tool.context_param:
            kwargs[tool.context_param] = ctx
        # A task-backed call arrives here inside its task (Server.dispatch started the task
        # around the whole middleware chain), so there is no task branch here.
        # The common cases without with_input's layer and closure (see with_input): a
        # legacy call (input is asked for with requests, not NeedInput), a first round.
        if ctx.meta.era != "modern":
            return await _call_tool(tool, name, kwargs, ctx)
        if _first_round(params):
            try:
                return await _call_tool(tool, name, kwargs, ctx)
            except NeedInput as need:
                return _input_required(server, ctx, f"tools/call\0{name}", {}, need)
        return await with_input(
            server, ctx, f"tools/call\0{name}", lambda: _call_tool(tool, name, kwargs, ctx)
        )

    async def tasks_method(ctx: Context) -> dict[str, Any]:
        if not any(t.task_support != "forbidden" for t in server.tools.values()):
            from ..types.errors import method_not_found

            raise method_not_found(ctx.method)
        if ctx.meta.era == "legacy":
            from .task_eras import serve_legacy

            return await serve_legacy(server.tasks, ctx)
        answer: dict[str, Any] = await server.tasks.dispatch(
            ctx.method, ctx.params, ctx.meta, ctx.principal
        )
        return answer

    async def prompts_list(ctx: Context) -> dict[str, Any]:
        prompts = server.prompts.values()
        items = listed(ctx, "prompt", "prompts", ((p.name, p.tags, p.wire) for p in prompts))
        return _page(server, ctx, "prompts", items)

    async def prompts_get(ctx: Context) -> dict[str, Any]:
        name = ctx.params.get("name")
        prompt = server.prompts.get(name) if isinstance(name, str) else None
        if (
            prompt is not None
            and vis.active
            and not vis.allows(ctx, "prompt", prompt.name, prompt.tags)
        ):
            prompt = None
        if prompt is None:
            raise invalid_params(f"Unknown prompt: {name}", {"name": name})
        arguments = object_param(ctx.params, "arguments", "prompts/get arguments must be an object")
        try:
            kwargs = prompt.arguments.validate(arguments)
        except validation_error() as exc:
            raise invalid_params(f"Invalid arguments for prompt {name}: {_short(exc)}") from None
        if prompt.arguments.context_param:
            kwargs[prompt.arguments.context_param] = ctx

        async def run() -> dict[str, Any]:
            result = prompt.result_from(await call_maybe_async(prompt.fn, kwargs))
            description = prompt.wire.get("description")
            if description and "description" not in result:
                result["description"] = description
            return result

        return await with_input(server, ctx, f"prompts/get\0{name}", run)

    async def resources_list(ctx: Context) -> dict[str, Any]:
        listed_resources = (r for r in server.resources.values() if r.listed)
        entries = ((r.uri, r.tags, r.wire) for r in listed_resources)
        return _page(server, ctx, "resources", listed(ctx, "resource", "resources", entries))

    async def templates_list(ctx: Context) -> dict[str, Any]:
        entries = ((t.wire["uriTemplate"], t.tags, t.wire) for t in server.templates)
        items = listed(ctx, "template", "templates", entries)
        return _page(server, ctx, "resourceTemplates", items)

    async def resources_read(ctx: Context) -> dict[str, Any]:
        uri = ctx.params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params("resources/read requires a string uri")
        entry = server.resources.get(uri)
        if entry is not None and vis.active and not vis.allows(ctx, "resource", uri, entry.tags):
            entry = None
        kwargs: dict[str, Any] = {}
        ttl: int | None = None
        if entry is not None:
            fn, mime, ctx_param, ttl = entry.fn, entry.mime_type, entry.context_param, entry.ttl_ms
            meta = entry.wire.get("_meta")
        else:
            for template in server.templates:
                if vis.active and not vis.allows(
                    ctx, "template", template.wire["uriTemplate"], template.tags
                ):
                    continue
                values = template.template.match(uri)
                if values is not None:
                    fn, mime, ctx_param, ttl = (
                        template.fn,
                        template.mime_type,
                        template.context_param,
                        template.ttl_ms,
                    )
                    meta = None
                    kwargs = {k: v for k, v in values.items() if k in template.param_names}
                    break
            else:
                raise _not_found(ctx, uri)
        if ctx_param:
            kwargs[ctx_param] = ctx

        async def run() -> dict[str, Any]:
            try:
                value = await call_maybe_async(fn, kwargs)
            except LookupError as exc:  # KeyError/IndexError from the reader: not found
                raise _not_found(ctx, uri) from exc
            return {"contents": resource_contents(uri, value, mime, meta)}

        result = await with_input(server, ctx, f"resources/read\0{uri}", run)
        if result.get("resultType") == "input_required":
            return result
        return _cacheable(server, ctx, result, ttl)

    async def complete(ctx: Context) -> dict[str, Any]:
        ref = ctx.params.get("ref")
        argument = ctx.params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise invalid_params("completion/complete requires ref and argument objects")
        if ref.get("type") == "ref/prompt":
            ref_name = ref.get("name")
            prompt = server.prompts.get(ref_name) if isinstance(ref_name, str) else None
            if prompt is None or (
                vis.active and not vis.allows(ctx, "prompt", prompt.name, prompt.tags)
            ):
                raise invalid_params(f"Unknown prompt: {ref.get('name')!r}")
        context = ctx.params.get("context")
        arguments = context.get("arguments") if isinstance(context, dict) else None
        values: Any = []
        if server.completer is not None:
            values = await call_maybe_async(
                server.completer, {"ref": ref, "argument": argument, "context": arguments}
            )
        if isinstance(values, dict):
            completion = values
        else:
            items = [str(v) for v in (values or [])]
            completion = {"values": items[:100], "total": len(items), "hasMore": len(items) > 100}
        return {"completion": completion}

    return {
        "server/discover": discover,
        "tools/list": tools_list,
        "tools/call": tools_call,
        "prompts/list": prompts_list,
        "prompts/get": prompts_get,
        "resources/list": resources_list,
        "resources/templates/list": templates_list,
        "resources/read": resources_read,
        "completion/complete": complete,
        "tasks/get": tasks_method,
        "tasks/update": tasks_method,
        "tasks/cancel": tasks_method,
        "tasks/result": tasks_method,
        "tasks/list": tasks_method,
    }


# ---------------------------------------------------------------------- helpers


def task_tool(server: Server, ctx: Context) -> ToolEntry | None:
    """The tool of a ``tools/call`` that must run as a task, else None.  Modern: the
    client declared the tasks extension and the tool allows it; a tool that requires a
    task refuses a client without the extension (-32021).  2025-11-25: the request
    carries ``task`` and the tool's ``execution.taskSupport`` allows it (-32601 when
    they disagree)."""
    name = ctx.params.get("name")
    tool = server.tools.get(name) if isinstance(name, str) else None
    if tool is None:
        return None
    vis = server.visibility
    if vis.active and not vis.allows(ctx, "tool", tool.name, tool.tags):
        return None  # answered as an unknown tool by the handler
    if ctx.meta.era == "legacy":
        from .task_eras import wants_task

        return tool if wants_task(tool, ctx.params, ctx.meta.protocol_version) else None
    if tool.task_support == "forbidden":
        return None
    from .tasks import declares_tasks, tasks_required_error

    if declares_tasks(ctx.meta):
        return tool
    if tool.task_support == "required":
        raise tasks_required_error()
    return None


async def _call_tool(
    tool: ToolEntry, name: str, kwargs: dict[str, Any], ctx: Context
) -> dict[str, Any]:
    """Run one tool call and shape its ``CallToolResult`` (tool failures become
    ``isError`` results; protocol errors and input requests propagate)."""
    try:
        if tool.threaded and not tool.coroutine:
            value = await run_sync(functools.partial(tool.fn, **kwargs))
        else:
            value = tool.fn(**kwargs)
        if type(value) not in PLAIN_RESULTS and inspect.isawaitable(value):
            value = await value  # an async def's coroutine, or an awaitable a def returned
    except (McpError, NeedInput):
        raise
    except ToolError as exc:
        return _tool_error(str(exc))
    except Exception as exc:  # the tool failed: the model should see it
        if _is_cancel(exc):
            raise
        ctx.exception = exc
        return _tool_error(f"Error executing tool {name}: {exc}")
    return tool.result_from(value)


def _is_cancel(exc: BaseException) -> bool:
    return isinstance(exc, anyio.get_cancelled_exc_class())


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _short(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def _not_found(ctx: Context, uri: str) -> McpError:
    if ctx.meta.era == "legacy":
        return McpError(LEGACY_RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    return invalid_params(f"Resource not found: {uri}", {"uri": uri})


def _cacheable(
    server: Server, ctx: Context, result: dict[str, Any], ttl_ms: int | None = None
) -> dict[str, Any]:
    if ctx.meta.era == "modern":
        result["ttlMs"] = server.cache_ttl_ms if ttl_ms is None else ttl_ms
        result["cacheScope"] = server.cache_scope
    return result


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: object) -> int:
    if cursor is None or cursor == "":
        return 0
    if not isinstance(cursor, str) or len(cursor) > 64:
        raise invalid_params("Invalid cursor")
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise invalid_params("Invalid cursor") from None
    if not text.startswith("o:") or not text[2:].isdigit():
        raise invalid_params("Invalid cursor")
    return int(text[2:])


def _page(server: Server, ctx: Context, key: str, items: list[Any]) -> dict[str, Any]:
    offset = _decode_cursor(ctx.params.get("cursor"))
    if offset > len(items):
        raise invalid_params("Invalid cursor")
    end = offset + server.page_size
    result: dict[str, Any] = {key: items[offset:end] if offset or end < len(items) else items}
    if end < len(items):
        result["nextCursor"] = _encode_cursor(end)
    return _cacheable(server, ctx, result)


def _first_round(params: dict[str, Any]) -> bool:
    """No earlier round to resume: nothing to open, and the Context creates its
    InputRound only if the handler asks for input."""
    return params.get("requestState") is None and "inputResponses" not in params


def _input_required(
    server: Server, ctx: Context, binding: str, responses: dict[str, Any], need: NeedInput
) -> dict[str, Any]:
    """The ``InputRequiredResult`` for ``need``, its sealed state bound to the request
    (``binding``) and the principal."""
    principal = "" if ctx.principal is None else str(ctx.principal)
    state = ctx._round.state if ctx._round is not None else {}
    payload = sealed_payload({"r": responses, "s": state})  # (+ the span, when traced)
    sealed = server.keyring.seal(payload, f"{binding}\0{principal}")
    return input_required_result(need.requests, sealed)


async def with_input(
    server: Server,
    ctx: Context,
    binding: str,
    run: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """Run a handler that may ask for input; on the modern era turn :class:`NeedInput` into
    an ``InputRequiredResult`` whose sealed ``requestState`` carries every answer so far."""
    if ctx.meta.era != "modern":
        return await run()
    params = ctx.params
    if _first_round(params):  # the common case
        try:
            return await run()
        except NeedInput as need:
            return _input_required(server, ctx, binding, {}, need)
    principal = "" if ctx.principal is None else str(ctx.principal)
    full_binding = f"{binding}\0{principal}"
    token = params.get("requestState")
    responses: dict[str, Any] = {}
    state: dict[str, Any] = {}
    if token is not None:
        try:
            opened = opened_payload(server.keyring.open(token, full_binding))
        except InvalidState as exc:
            raise invalid_params(f"Invalid requestState: {exc}") from None
        responses.update(opened.get("r") or {})
        state = opened.get("s") or {}
    given = params.get("inputResponses")
    if "inputResponses" in params:
        if not isinstance(given, dict):
            raise invalid_params("inputResponses must be an object")
        responses.update(given)
    ctx._round = InputRound(responses=responses, state=state)
    try:
        return await run()
    except NeedInput as need:
        return _input_required(server, ctx, binding, responses, need)
