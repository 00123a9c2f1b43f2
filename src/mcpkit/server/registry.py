"""What a server offers: tools, resources, resource templates and prompts.

Each entry is built once at registration (schema, compiled validator, wire form) so that
listing is a cached list and calling is one validation plus the user's function.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Unpack

from ..types.errors import INTERNAL_ERROR, McpError
from .content import blocks, is_content, json_text, to_content_blocks
from .schema import ArgumentModel, output_schema_for, validation_error
from .uritemplate import UriTemplate, is_template
from .visibility import check_tags

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from ..protocol.headers import HeaderParam
    from .options import PromptOptions, ResourceOptions

Fn = Callable[..., object]
#: ``@server.tool(task=...)``: may a call run as a durable task (tasks extension)?
TaskSupport = Literal["forbidden", "optional", "required"]
#: ``@server.tool(task_start=...)``: "manual" tools call ``ctx.start_task()`` themselves.
TaskStart = Literal["auto", "manual"]


#: Results that are certainly not awaitable (exact types): skips the ABC check that
#: ``inspect.isawaitable`` makes for every plain return value.
PLAIN_RESULTS = frozenset({str, dict, list, tuple, int, float, bool, bytes, type(None)})


async def call_maybe_async(fn: Fn, kwargs: dict[str, Any]) -> Any:
    result = fn(**kwargs)
    if type(result) in PLAIN_RESULTS:
        return result
    if inspect.isawaitable(result):
        result = await result
    return result


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


class ToolResult:
    """Full control over a tool's answer: content, structured content, error flag, _meta."""

    __slots__ = ("content", "is_error", "meta", "structured")

    def __init__(
        self,
        content: object = None,
        *,
        structured: object = None,
        is_error: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.content = content
        self.structured = structured
        self.is_error = is_error
        self.meta = meta

    def to_wire(self, mirror: bool = True) -> dict[str, Any]:
        """The ``tools/call`` result as JSON: content blocks (a JSON text block when only
        structured content was given, unless ``mirror`` is False), ``structuredContent``
        and ``isError``."""
        content = to_content_blocks(self.content)
        if not content and self.structured is not None and mirror:
            content = [{"type": "text", "text": json_text(self.structured)}]
        out: dict[str, Any] = {"content": content}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        if self.is_error:
            out["isError"] = True
        if self.meta:
            out["_meta"] = self.meta
        return out


class ToolError(Exception):
    """Raise from a tool to return ``isError: true`` with this message (not a protocol
    error: the model gets to see it and can correct itself)."""


@dataclass(slots=True)
class Entry:
    """What every registration keeps: its function, and its entry in the list results."""

    fn: Fn
    wire: dict[str, Any]


@dataclass(slots=True)
class ToolEntry(Entry):
    name: str
    arguments: ArgumentModel | None
    output_adapter: TypeAdapter[Any] | None = None
    wrapped_output: bool = False
    has_output_schema: bool = False
    header_params: tuple[HeaderParam, ...] = ()
    #: May the call run as a task (tasks extension)?
    task_support: TaskSupport = "forbidden"
    #: The tool calls ``ctx.start_task()`` itself after gathering input synchronously.
    task_manual: bool = False
    #: Validator of a hand-written ``input_schema`` (type-hinted tools use ``arguments``).
    schema_validator: Any = None
    context_param: str | None = None
    accepts: frozenset[str] | None = None
    #: A sync function runs in a worker thread (the default; ``inline=True`` says no).
    threaded: bool = False
    #: ``fn`` is an ``async def``.
    coroutine: bool = False
    #: Seconds a call may run before it is cancelled (``ToolTimeout`` middleware).
    timeout: float | None = None
    #: Labels for visibility rules (``Server(include_tags=...)``, ``server.disable``).
    tags: frozenset[str] = frozenset()
    #: Mirror ``structuredContent`` as a JSON text block in ``content`` (the spec's
    #: backward-compatible default).  False leaves ``content`` empty when the tool gave
    #: only structured content; None: the server's ``mirror_structured``.
    mirror_structured: bool | None = None

    def explicit_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check arguments against a hand-written schema; raise ToolError listing errors."""
        if self.schema_validator is not None:
            try:
                errors = sorted(
                    self.schema_validator.iter_errors(arguments), key=lambda e: list(e.path)
                )
            except Exception as exc:  # an unresolvable (e.g. network) $ref
                raise ToolError(
                    f"Cannot check the arguments of tool {self.name}: {type(exc).__name__}"
                ) from None
            if errors:
                details = "; ".join(
                    f"{'/'.join(str(p) for p in e.path) or 'arguments'}: {e.message}"
                    for e in errors[:5]
                )
                raise ToolError(f"Invalid arguments for tool {self.name}: {details}")
        if self.accepts is None:
            return dict(arguments)
        return {k: v for k, v in arguments.items() if k in self.accepts}

    def result_from(self, value: Any) -> dict[str, Any]:
        """Convert a function's return value into a ``CallToolResult`` dict."""
        if type(value) is str and not self.has_output_schema:  # the usual tool result
            return {"content": [{"type": "text", "text": value}]}
        if isinstance(value, ToolResult):
            return value.to_wire(self.mirror_structured is not False)
        if (
            isinstance(value, dict)
            and isinstance(value.get("content"), list)
            and all(is_content(b) for b in value["content"])
        ):
            return value
        if self.has_output_schema:
            if self.output_adapter is not None:
                # Check the value against the declared type first: structured content that
                # contradicts the advertised outputSchema is a tool error, not a result.
                try:
                    checked = self.output_adapter.validate_python(value)
                except validation_error() as exc:
                    return {
                        "content": [
                            {
                                "type": "text",
                                "text": f"Tool {self.name} returned a value that does not match "
                                f"its outputSchema: {exc.error_count()} error(s), first: "
                                f"{exc.errors()[0].get('msg')}",
                            }
                        ],
                        "isError": True,
                    }
                structured = self.output_adapter.dump_python(checked, mode="json")
            else:
                structured = value
            if self.wrapped_output:
                structured = {"result": structured}
            if self.mirror_structured is False:
                return {"content": [], "structuredContent": structured}
            return {
                "content": [{"type": "text", "text": json_text(structured)}],
                "structuredContent": structured,
            }
        return {"content": to_content_blocks(value)}


def check_tool_options(
    timeout: float | None, inline: bool, task: TaskSupport, task_start: TaskStart
) -> None:
    """Refuse options that cannot work together, when ``Server.tool(...)`` is called
    (before any function is decorated)."""
    if timeout is not None and timeout <= 0:
        raise ValueError("timeout must be a positive number of seconds")
    if inline and timeout is not None:
        raise ValueError("an inline tool cannot be timed out: it runs to its end")
    if task not in ("forbidden", "optional", "required"):
        raise ValueError("task must be 'forbidden', 'optional' or 'required'")
    if task_start not in ("auto", "manual"):
        raise ValueError("task_start must be 'auto' or 'manual'")


def make_tool(
    fn: Fn,
    context_type: type,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: dict[str, Any] | None = None,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    structured_output: bool | None = None,
    mirror_structured: bool | None = None,
    app: object = None,
    meta: dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    task: TaskSupport = "forbidden",
    task_start: TaskStart = "auto",
    inline: bool = False,
    timeout: float | None = None,
    tags: Iterable[str] | None = None,
) -> ToolEntry:
    """The entry ``Server.tool`` registers; the keywords (and their defaults) are the
    options of ``ToolOptions``, listed once here.  ``app`` is Server.tool's to apply (its
    view is a resource of the server; ``meta`` arrives with its ``ui`` filled in)."""
    from ..protocol.headers import header_params
    from .docstrings import add_descriptions, describe

    check_icons(icons)

    tool_name = name or fn.__name__
    arguments = ArgumentModel(fn, context_type, title=tool_name.title().replace("_", ""))
    doc_text, doc_params = describe(fn)
    if doc_params:
        add_descriptions(arguments.schema, doc_params)
    schema = input_schema if input_schema is not None else arguments.schema
    out_schema, wrapped, adapter = (None, False, None)
    if output_schema is not None:
        out_schema = output_schema
    elif structured_output is not False:
        # Object-like returns are structured by default; primitives only when asked.
        out_schema, wrapped, adapter = output_schema_for(
            fn, force=bool(structured_output), hints=arguments.hints
        )
    wire = _drop_none(
        {
            "name": tool_name,
            "title": title,
            "description": description or doc_text,
            "inputSchema": schema,
            "outputSchema": out_schema,
            "annotations": annotations,
            "icons": icons,
            "_meta": meta,
        }
    )
    return ToolEntry(
        name=tool_name,
        fn=fn,
        wire=wire,
        arguments=None if input_schema is not None else arguments,
        output_adapter=adapter,
        wrapped_output=wrapped,
        has_output_schema=out_schema is not None,
        # A plain schema of our own making cannot carry x-mcp-header: no walk needed.
        header_params=() if arguments.plain and input_schema is None else header_params(schema),
        schema_validator=_compile_schema(input_schema) if input_schema is not None else None,
        context_param=arguments.context_param,
        accepts=None if arguments.accepts_kwargs else frozenset(arguments.field_names),
        coroutine=inspect.iscoroutinefunction(fn),
        task_support=task,
        task_manual=task_start == "manual",
        # A plain def runs in a worker thread unless inline (which refuses a timeout: a
        # timeout can only abandon a call that runs in a worker thread).
        threaded=not inline,
        timeout=timeout,
        tags=check_tags(tags),
        mirror_structured=mirror_structured,
    )


def make_prompt(fn: Fn, context_type: type, **options: Unpack[PromptOptions]) -> PromptEntry:
    """The entry ``Server.prompt`` registers: its string parameters are the prompt's
    arguments; every option defaults to None (unset)."""
    from .docstrings import add_descriptions, describe

    prompt_name = options.get("name") or fn.__name__
    check_elicit_calls(fn)
    model = ArgumentModel(fn, context_type, title=prompt_name.title())
    doc_text, doc_params = describe(fn)
    add_descriptions(model.schema, doc_params)
    icons = check_icons(options.get("icons"))
    wire: dict[str, Any] = {"name": prompt_name}
    for key, value in (
        ("title", options.get("title")),
        ("description", options.get("description") or doc_text),
        ("icons", icons),
        ("_meta", options.get("meta")),
    ):
        if value:
            wire[key] = value
    wire["arguments"] = prompt_arguments(model)
    return PromptEntry(fn, wire, prompt_name, model, tags=check_tags(options.get("tags")))


def _compile_schema(schema: dict[str, Any]) -> Any:
    """A JSON Schema 2020-12 validator for a hand-written ``input_schema`` (compiled once).

    ``$ref`` resolves within the schema only: retrieval of any other resource is refused
    (jsonschema's default would fetch ``http(s)`` refs), and a call whose arguments need
    one is answered with a tool error.
    """
    from jsonschema import Draft202012Validator
    from referencing import Registry
    from referencing.exceptions import NoSuchResource

    missing: Any = NoSuchResource
    registry: Any = Registry

    def refuse(uri: str) -> NoReturn:
        raise missing(ref=uri)  # never fetch a schema over the network

    return Draft202012Validator(schema, registry=registry(retrieve=refuse))


@dataclass(slots=True)
class ResourceEntry(Entry):
    uri: str
    mime_type: str | None
    context_param: str | None
    ttl_ms: int | None = None
    listed: bool = True
    tags: frozenset[str] = frozenset()


@dataclass(slots=True)
class TemplateEntry(Entry):
    template: UriTemplate
    mime_type: str | None
    context_param: str | None
    param_names: tuple[str, ...] = ()
    ttl_ms: int | None = None
    tags: frozenset[str] = frozenset()


def make_resource(
    fn: Fn, context_type: type, uri: str, **options: Unpack[ResourceOptions]
) -> ResourceEntry | TemplateEntry:
    """The entry ``Server.resource`` registers: a template when ``uri`` has
    ``{variables}``.  Every option defaults to None (unset), but ``listed`` to True."""
    model = ArgumentModel(fn, context_type, title="Resource")
    doc = inspect.getdoc(fn)
    mime_type = options.get("mime_type")
    listing = {
        "name": options.get("name") or fn.__name__,
        "title": options.get("title"),
        "description": options.get("description") or (doc.strip() if doc else None),
        "mimeType": mime_type,
        "annotations": options.get("annotations"),
        "icons": check_icons(options.get("icons")),
        "_meta": options.get("meta"),
    }
    ttl_ms = options.get("ttl_ms")
    if is_template(uri):
        compiled = UriTemplate.compile(uri)
        tags = check_tags(options.get("tags"))
        wire = {"uriTemplate": uri, **_drop_none(listing)}
        context, params = model.context_param, model.field_names
        return TemplateEntry(fn, wire, compiled, mime_type, context, params, ttl_ms, tags)
    wire = {"uri": uri, **_drop_none(listing)}
    if (size := options.get("size")) is not None:
        wire["size"] = size
    listed, tags = options.get("listed", True), check_tags(options.get("tags"))
    return ResourceEntry(fn, wire, uri, mime_type, model.context_param, ttl_ms, listed, tags)


def resource_contents(
    uri: str, value: Any, mime_type: str | None, meta: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A resource function's return value -> ``contents`` items.

    ``str`` -> text; ``bytes`` -> base64 blob; a dict with ``text``/``blob`` -> as is (uri
    filled in); a list -> each.
    """
    if isinstance(value, list):
        out: list[dict[str, Any]] = []
        for element in value:
            out.extend(resource_contents(uri, element, mime_type, meta))
        return out
    item: dict[str, Any]
    if isinstance(value, dict) and ("text" in value or "blob" in value):
        item = dict(value)
        item.setdefault("uri", uri)
        if mime_type and "mimeType" not in item:
            item["mimeType"] = mime_type
        return [item]
    if isinstance(value, (bytes, bytearray, memoryview)):
        item = {"uri": uri, "blob": base64.b64encode(bytes(value)).decode()}
    elif isinstance(value, str):
        item = {"uri": uri, "text": value}
    else:
        item = {"uri": uri, "text": json_text(value)}
        mime_type = mime_type or "application/json"
    if mime_type:
        item["mimeType"] = mime_type
    if meta:
        item["_meta"] = meta
    return [item]


@dataclass(slots=True)
class PromptEntry(Entry):
    name: str
    arguments: ArgumentModel
    required: tuple[str, ...] = field(default_factory=tuple)
    tags: frozenset[str] = frozenset()

    def result_from(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict) and "messages" in value:
            return value
        if isinstance(value, (str, dict)) or not isinstance(value, (list, tuple)):
            value = [value]
        messages = [_prompt_message(item) for item in value]
        return {"messages": messages}


def _prompt_message(item: Any) -> dict[str, Any]:
    if isinstance(item, dict) and "role" in item and "content" in item:
        content = item["content"]
        if not isinstance(content, dict):
            content = to_content_blocks(content)[0]
        return {"role": item["role"], "content": content}
    if isinstance(item, str):
        return {"role": "user", "content": {"type": "text", "text": item}}
    converted = blocks([item]) if is_content(item) else to_content_blocks(item)
    if not converted:
        raise McpError(INTERNAL_ERROR, "prompt produced an empty message")
    return {"role": "user", "content": converted[0]}


def prompt_arguments(arguments: ArgumentModel) -> list[dict[str, Any]]:
    props = arguments.schema.get("properties", {})
    required = set(arguments.schema.get("required", []))
    out = []
    for name in arguments.field_names:
        entry: dict[str, Any] = {"name": name, "required": name in required}
        description = props.get(name, {}).get("description")
        if description:
            entry["description"] = description
        out.append(entry)
    return out


#: ``fn(ref, argument, context)``: a list of strings or a ``completion`` dict, or an
#: awaitable of one.
Completer = Callable[..., object]


SAFE_ICON_MIME = (
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/svg+xml",
    "image/webp",
    "image/gif",
)


def check_icons(icons: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Refuse icons a client could be hurt by: only ``https:`` URLs and ``data:`` images
    (no ``javascript:``, ``file:``, plain ``http:`` or other schemes)."""
    if not icons:
        return icons
    for icon in icons:
        src = icon.get("src") if isinstance(icon, dict) else None
        if not isinstance(src, str):
            raise ValueError("every icon needs a string 'src'")
        lowered = src.strip().lower()
        if lowered.startswith("data:"):
            mime = lowered[5:].split(";", 1)[0].split(",", 1)[0]
            if mime not in SAFE_ICON_MIME:
                raise ValueError(f"icon data URI with unsafe type {mime!r}")
        elif not lowered.startswith("https://"):
            raise ValueError(f"icon src must be an https: URL or a data: image, not {src[:40]!r}")
    return icons


def check_elicit_calls(func: Callable[..., object]) -> None:
    """``elicitation.check_elicited_types``, imported only for a function that elicits."""
    code = getattr(func, "__code__", None)
    if code is not None and "elicit" not in code.co_names:
        return
    from .elicitation import check_elicited_types

    check_elicited_types(func)
