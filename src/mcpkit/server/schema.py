"""JSON Schema (2020-12) and compiled validation from a function's type hints.

For each registered function we build, once, a pydantic model of its parameters: it
gives the ``inputSchema`` and a compiled validator (pydantic-core) that coerces and checks
arguments on every call without per-call setup.  Parameters annotated with the request
``Context`` are injected, not exposed.  Return annotations give the ``outputSchema``.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

from ..types.unset import UNSET

if TYPE_CHECKING:
    from pydantic import BaseModel, TypeAdapter, ValidationError

# pydantic is imported when the first function is registered, not with ``import mcpkit``
# (it is most of the import time of the server API).

__all__ = ["ArgumentModel", "ValidationError", "output_schema_for", "strip_titles"]


def validation_error() -> type[ValidationError]:
    """pydantic's ``ValidationError`` (for ``except`` clauses; imports pydantic on use)."""
    from pydantic import ValidationError

    return ValidationError


def __getattr__(name: str) -> Any:
    if name == "ValidationError":
        return validation_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_context(annotation: object, context_type: type) -> bool:
    if annotation is context_type:
        return True
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return any(_is_context(a, context_type) for a in get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, context_type)


class ArgumentModel:
    """Parameters of one function: schema, validator and the name of its Context slot.

    A function whose parameters are all plain ``str``/``int``/``float``/``bool`` (the
    common case) gets its schema written out directly, identical to what pydantic would
    emit (a test holds them equal), and its pydantic model only when a call first needs
    more than the exact-type fast path: registering such a tool builds no pydantic model,
    and a server of them never imports pydantic to start (cold starts).
    """

    __slots__ = (
        "_fast",
        "_fields",
        "_json_params",
        "_model",
        "_title",
        "accepts_kwargs",
        "context_param",
        "field_names",
        "has_fields",
        "hints",
        "plain",
        "schema",
    )

    def __init__(self, fn: Callable[..., object], context_type: type, *, title: str) -> None:
        hints = typing.get_type_hints(fn, include_extras=True)
        #: Kept for the return annotation (``output_schema_for``): resolved once per tool.
        self.hints = hints
        fields: dict[str, Any] = {}
        self.context_param: str | None = None
        self.accepts_kwargs = False
        for name, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                self.accepts_kwargs |= param.kind is param.VAR_KEYWORD
                continue
            annotation = hints.get(name, Any)
            if _is_context(annotation, context_type):
                self.context_param = name
                continue
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[name] = (annotation, default)
        self.field_names = tuple(fields)
        self.has_fields = bool(fields)
        self._fields = fields
        self._title = title
        self._model: type[BaseModel] | None = None
        self._fast = _fast_plan(fields)
        #: Only str/int/float/bool properties: no object or array parameter, and no
        #: ``x-mcp-header`` annotation (the registry skips looking for them).
        self.plain = self._fast is not None
        if self._fast is not None:
            self.schema = _plain_schema(self._fast)
            self._json_params: frozenset[str] = frozenset()
            return
        schema = self._adapter.model_json_schema()
        schema.pop("title", None)
        schema["type"] = "object"
        schema.setdefault("properties", {})
        self.schema = inline_refs(strip_titles(schema))
        self._json_params = _structured_params(self.schema)

    @property
    def _adapter(self) -> type[BaseModel]:
        """The pydantic model of the parameters, built on first use."""
        if self._model is None:
            import pydantic
            from pydantic import ConfigDict

            self._model = pydantic.create_model(
                f"{self._title}Arguments",
                __config__=ConfigDict(arbitrary_types_allowed=True, extra="ignore"),
                **self._fields,
            )
        return self._model

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Checked and coerced keyword arguments; raises :class:`ValidationError`."""
        if not self.has_fields:
            return {}
        fast = self._fast
        if fast is not None:
            # Plain str/int/float/bool parameters given values of exactly that type are
            # what pydantic would return unchanged: skip it.  Anything else (a missing
            # required argument, a value to coerce or reject) takes the full path.
            out: dict[str, Any] = {}
            for name, kind, default in fast:
                value = arguments.get(name, UNSET)
                if value is UNSET:
                    if default is UNSET:
                        break
                    value = default
                elif type(value) is not kind:
                    break
                out[name] = value
            else:
                return out
        if self._json_params:
            arguments = _parse_json_strings(arguments, self._json_params)
        instance = self._adapter.model_validate(arguments)
        return {name: getattr(instance, name) for name in self.field_names}


def _types_of(prop: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    kind = prop.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for branch in prop.get(key) or ():
            if isinstance(branch, dict):
                found |= _types_of(branch)
    return found


def _structured_params(schema: dict[str, Any]) -> frozenset[str]:
    """Parameters whose schema takes an object or an array and never a string: the ones a
    language model may send as a JSON string (``"{\"a\": 1}"``)."""
    names = set()
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict):
            kinds = _types_of(prop)
            if kinds & {"object", "array"} and "string" not in kinds:
                names.add(name)
    return frozenset(names)


def _parse_json_strings(arguments: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """``arguments`` with each JSON-string value of an object/array parameter decoded,
    when it decodes to an object or array (else left for validation to reject).  A
    parameter that accepts strings is never touched (see :func:`_structured_params`)."""
    import orjson

    out = arguments
    for name in names:
        value = arguments.get(name)
        if not isinstance(value, str):
            continue
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        if isinstance(parsed, (dict, list)):
            if out is arguments:
                out = dict(arguments)
            out[name] = parsed
    return out


_PLAIN = (str, int, float, bool)
_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_IMMUTABLE_DEFAULTS = (str, int, float, bool, type(None))


def _fast_plan(fields: dict[str, Any]) -> tuple[tuple[str, type, Any], ...] | None:
    """(name, type, default) per parameter when every parameter is a bare ``str``, ``int``,
    ``float`` or ``bool`` with no default or an immutable one; else None."""
    plan = []
    for name, (annotation, default) in fields.items():
        if annotation not in _PLAIN or name.startswith("_"):
            return None
        if default is ...:
            default = UNSET
        elif type(default) not in _IMMUTABLE_DEFAULTS:
            return None
        plan.append((name, annotation, default))
    return tuple(plan)


def _plain_schema(plan: tuple[tuple[str, type, Any], ...]) -> dict[str, Any]:
    """The input schema pydantic gives plain parameters (titles stripped), without it."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, kind, default in plan:
        if default is UNSET:
            required.append(name)
            properties[name] = {"type": _JSON_TYPES[kind]}
        else:
            properties[name] = {"default": default, "type": _JSON_TYPES[kind]}
    schema: dict[str, Any] = {"properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace ``{"$ref": "#/$defs/X"}`` with the definition itself where that terminates.

    Many clients (and most models) cannot follow ``$ref``; pydantic emits one for every
    nested model.  Recursive definitions cannot be inlined and stay referenced (with
    ``$defs`` kept for them only).
    """
    defs = schema.get("$defs")
    if not isinstance(defs, dict) or not defs:
        return schema
    kept: set[str] = set()

    def resolve(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref[len("#/$defs/") :]
                if name in stack or name not in defs:
                    kept.add(name)
                    return node
                target = resolve(defs[name], (*stack, name))
                siblings = {k: resolve(v, stack) for k, v in node.items() if k != "$ref"}
                return {**target, **siblings} if isinstance(target, dict) else node
            return {k: resolve(v, stack) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(item, stack) for item in node]
        return node

    out: dict[str, Any] = resolve(schema, ())
    if kept:
        resolved: dict[str, Any] = {}
        while set(kept) - set(resolved):
            for name in sorted(set(kept) - set(resolved)):
                resolved[name] = resolve(defs[name], (name,)) if name in defs else {}
        out["$defs"] = resolved
    return out


def strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keys (noise in every tool list) but keep
    titles that are property names."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                out[key] = {k: strip_titles(v) for k, v in value.items()}
            else:
                out[key] = strip_titles(value)
        return out
    if isinstance(schema, list):
        return [strip_titles(item) for item in schema]
    return schema


def _is_object_type(annotation: object) -> bool:
    if annotation in (dict, typing.Dict):  # noqa: UP006
        return True
    origin = get_origin(annotation)
    if origin in (dict, typing.Dict):  # noqa: UP006
        return True
    if isinstance(annotation, type):
        from pydantic import BaseModel

        if issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation):
            return True
        if typing.is_typeddict(annotation):
            return True
    return False


def output_schema_for(
    fn: Callable[..., Any], force: bool = False, hints: dict[str, Any] | None = None
) -> tuple[dict[str, Any] | None, bool, Any]:
    """(outputSchema, wrapped, adapter) for a function's return annotation.

    Object-like returns (dict, TypedDict, dataclass, pydantic model) give a schema and
    structured content as is.  Other annotated returns that are not content (``int``,
    ``list[str]``...) are wrapped as ``{"result": value}`` so that the schema is an object,
    which 2025-11-25 clients require.  Returns (None, False, None) when there is no
    annotation or it is ``str``/content/``None``.  ``hints``: ``fn``'s type hints when
    the caller already resolved them (registration does, for the arguments).
    """
    if hints is None:
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:
            return None, False, None
    if "return" not in hints:
        return None, False, None
    annotation = hints["return"]
    if annotation in (None, type(None), str, Any, inspect.Signature.empty):
        return None, False, None
    if _is_content_annotation(annotation) or _is_result_type(annotation):
        return None, False, None
    from pydantic import TypeAdapter  # only for annotations that need a schema

    if _is_object_type(annotation):
        adapter: TypeAdapter[Any] = TypeAdapter(_pydantic_compatible(annotation))
        schema = strip_titles(adapter.json_schema(mode="serialization"))
        schema.setdefault("type", "object")
        return schema, False, adapter
    if not force:
        return None, False, None
    adapter = TypeAdapter(annotation)
    inner = strip_titles(adapter.json_schema(mode="serialization"))
    defs = inner.pop("$defs", None)
    schema = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    if defs:
        schema["$defs"] = defs
    return schema, True, adapter


def _pydantic_compatible(annotation: Any) -> Any:
    """pydantic refuses ``typing.TypedDict`` before Python 3.12 (it needs
    ``typing_extensions.TypedDict``); users write the former, so rebuild it as the latter."""
    import sys

    if sys.version_info >= (3, 12) or not typing.is_typeddict(annotation):
        return annotation
    import typing_extensions

    if type(annotation).__module__ == "typing_extensions":
        return annotation
    hints = typing.get_type_hints(annotation, include_extras=True)
    fields = {
        name: hint if name in annotation.__required_keys__ else typing_extensions.NotRequired[hint]
        for name, hint in hints.items()
    }
    make: Any = typing_extensions.TypedDict
    rebuilt = make(annotation.__name__, fields)
    rebuilt.__doc__ = annotation.__doc__
    return rebuilt


def _is_result_type(annotation: object) -> bool:
    from .registry import ToolResult

    return isinstance(annotation, type) and issubclass(annotation, ToolResult)


def _is_content_annotation(annotation: object) -> bool:
    from .content import Audio, EmbeddedResource, Image, ResourceLink, Text

    content_types = (Text, Image, Audio, EmbeddedResource, ResourceLink)
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return all(_is_content_annotation(a) or a is type(None) for a in get_args(annotation))
    if origin in (list, tuple, typing.List, typing.Sequence):  # noqa: UP006
        args = get_args(annotation)
        return bool(args) and all(_is_content_annotation(a) for a in args if a is not Ellipsis)
    return isinstance(annotation, type) and issubclass(annotation, content_types)
