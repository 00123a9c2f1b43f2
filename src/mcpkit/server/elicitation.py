"""Typed elicitation: ``await ctx.elicit("message", Model)``.

The spec lets a server ask only for a *flat* object of primitive fields (string, number,
integer, boolean, a string enum, a multi-select of string enums), so a type is turned into
that restricted schema once (cached) and the answer comes back typed:

* a pydantic model, dataclass or TypedDict: one field per attribute, the answer is an
  instance of the type (validated by pydantic);
* a scalar (``str``, ``int``, ``float``, ``bool``), a ``Literal[...]`` of strings or a
  string ``Enum``: one field named ``value``, the answer is the value itself.

The outcome is :class:`Accepted` (``.data``), :class:`Declined` or :class:`Cancelled`, so the
three cases the user can choose are handled explicitly.  A type that elicitation cannot
express (nested objects, lists of anything but enums, unions) raises ``TypeError`` when
its schema is first built; call :func:`elicitation_schema` at import time to fail before
the first request.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType
from typing import Any, Generic, Literal, TypeVar, get_args, get_origin

from ..types.errors import invalid_params

__all__ = ["Accepted", "Cancelled", "Declined", "elicitation_schema"]

T = TypeVar("T")

_PRIMITIVE_KEYS = {
    "string": {"type", "title", "description", "minLength", "maxLength", "format", "default"},
    "number": {"type", "title", "description", "minimum", "maximum", "default"},
    "integer": {"type", "title", "description", "minimum", "maximum", "default"},
    "boolean": {"type", "title", "description", "default"},
}
_FORMATS = {"email", "uri", "date", "date-time"}


@dataclass(frozen=True, slots=True)
class Accepted(Generic[T]):
    """The user accepted and answered: ``data`` is the typed answer."""

    data: T
    action: Literal["accept"] = "accept"


@dataclass(frozen=True, slots=True)
class Declined:
    """The user explicitly said no."""

    action: Literal["decline"] = "decline"


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The user dismissed the request without choosing."""

    action: Literal["cancel"] = "cancel"


def _is_structured(kind: object) -> bool:
    from pydantic import BaseModel

    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return True
    from typing_extensions import is_typeddict  # both kinds (pydantic's dependency)

    return dataclasses.is_dataclass(kind) or is_typeddict(kind)


@functools.lru_cache(maxsize=256)
def elicitation_schema(kind: Any) -> tuple[dict[str, Any], bool]:
    """(the restricted ``requestedSchema`` for ``kind``, whether the answer is wrapped in
    a ``value`` field); raises ``TypeError`` for a type elicitation cannot express."""
    from pydantic import TypeAdapter

    from .schema import inline_refs, strip_titles

    wrapped = not _is_structured(kind)
    if wrapped and not _scalar_like(kind):
        raise TypeError(
            f"ctx.elicit cannot ask for {kind!r}: use a pydantic model, dataclass, "
            "TypedDict, Literal of strings, string Enum or str/int/float/bool"
        )
    schema = inline_refs(strip_titles(TypeAdapter(kind).json_schema()))
    if wrapped:  # one field, "value"
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    properties = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name, prop in properties.items():
        out[name] = _primitive(kind, name, prop)
    result: dict[str, Any] = {"type": "object", "properties": out}
    required = [n for n in schema.get("required", ()) if n in out]
    if required:
        result["required"] = required
    return result, wrapped


def _scalar_like(kind: object) -> bool:
    if kind in (str, int, float, bool):
        return True
    if get_origin(kind) is Literal:
        return all(isinstance(v, str) for v in get_args(kind))
    return isinstance(kind, type) and issubclass(kind, enum.Enum)


def _primitive(kind: Any, name: str, prop: dict[str, Any]) -> dict[str, Any]:
    """One property in the restricted form, or TypeError naming what is not allowed."""
    out: dict[str, Any]
    branches = prop.get("anyOf")
    if isinstance(branches, list):  # Optional[X]: X, not required
        rest = [b for b in branches if b.get("type") != "null"]
        if len(rest) != 1:
            raise TypeError(f"{kind!r}.{name}: elicitation allows no unions")
        prop = {**{k: v for k, v in prop.items() if k != "anyOf"}, **rest[0]}
    if "enum" in prop or "const" in prop:
        values = prop.get("enum") or [prop.get("const")]
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"{kind!r}.{name}: elicitation enums must be strings")
        out = {"type": "string", "enum": list(values)}
        for key in ("title", "description", "default"):
            if key in prop:
                out[key] = prop[key]
        return out
    kind_name = prop.get("type")
    if kind_name == "array":
        items = prop.get("items") or {}
        values = items.get("enum")
        if not values or not all(isinstance(v, str) for v in values):
            raise TypeError(f"{kind!r}.{name}: a list must be of string enum values")
        out = {"type": "array", "items": {"type": "string", "enum": list(values)}}
        for key in ("title", "description", "default", "minItems", "maxItems"):
            if key in prop:
                out[key] = prop[key]
        return out
    allowed = _PRIMITIVE_KEYS.get(kind_name) if isinstance(kind_name, str) else None
    if allowed is None:
        raise TypeError(
            f"{kind!r}.{name}: elicitation allows only flat string, number, integer, "
            f"boolean and enum fields, not {kind_name or 'this type'}"
        )
    out = {k: v for k, v in prop.items() if k in allowed}
    if out.get("default", 0) is None:  # Optional[X] = None: the field is just not required
        del out["default"]
    if "format" in out and out["format"] not in _FORMATS:
        del out["format"]
    return out


def outcome(kind: Any, wrapped: bool, answer: dict[str, Any]) -> Any:
    """The typed outcome of an ``ElicitResult``."""
    action = answer.get("action")
    if action == "decline":
        return Declined()
    if action != "accept":
        return Cancelled()
    from pydantic import TypeAdapter, ValidationError

    content = answer.get("content") or {}
    try:
        if wrapped:
            return Accepted(TypeAdapter(kind).validate_python(content.get("value")))
        return Accepted(TypeAdapter(kind).validate_python(content))
    except ValidationError as exc:
        raise invalid_params(f"The elicitation answer does not fit {kind!r}: {exc}") from None


_STATIC_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.Constant, ast.Load)


def _source_of(code: CodeType) -> str | None:
    """The function's source from the line cache and its code's own line span.

    ``inspect.getsource`` finds the block by mapping the file to a module (a scan of
    ``sys.modules``) and tokenizing from the ``def``: several ms per tool on a cold start.
    The code object already knows its lines (decorators through the last position)."""
    import linecache

    lines = linecache.getlines(code.co_filename)
    ends = [end for _, end, _, _ in code.co_positions() if end is not None]
    if not lines or not ends:
        return None
    return "".join(lines[code.co_firstlineno - 1 : max(ends)])


def check_elicited_types(fn: Callable[..., object]) -> None:
    """Refuse, at registration, a type that elicitation cannot express, when the function
    names it directly in a ``ctx.elicit(message, Type)`` call (best effort: the source
    is read and the name resolved in the function's globals and closure; a type chosen
    at run time is checked when its schema is first built).  Raises ``TypeError``."""
    import inspect
    import textwrap

    code = getattr(fn, "__code__", None)
    if code is None or "elicit" not in code.co_names:
        return
    try:
        source = _source_of(code)
        if source is None:
            raise SyntaxError("no cached source")
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:  # no cached lines, or an odd layout: the slow, thorough way
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            return
    scope = dict(getattr(fn, "__globals__", {}))
    closure = inspect.getclosurevars(fn)
    scope.update(closure.nonlocals)
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "elicit"
        ):
            continue
        given = node.args[1] if len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "requested_schema":
                given = keyword.value
        if given is None or not all(isinstance(n, _STATIC_NODES) for n in ast.walk(given)):
            continue  # absent, a dict schema, or computed (a call...): checked on first use
        try:
            # Names, attributes, subscripts and constants only: nothing is called.
            kind = eval(compile(ast.Expression(given), "<elicit>", "eval"), scope)
        except Exception:
            continue  # not resolvable statically: checked on first use
        if kind is None or isinstance(kind, dict):
            continue
        try:
            elicitation_schema(kind)
        except TypeError as exc:
            name = getattr(fn, "__name__", "the function")
            raise TypeError(f"{name}: {exc}") from None
