"""``CallToolResult.data``: a tool's structured content as Python values.

A tool with an ``outputSchema`` returns ``structuredContent``; the caller usually wants it
as the type it was declared with on the server (a dataclass, a pydantic model, a
``TypedDict``).  ``call_tool(..., result_type=T)`` validates it into ``T`` with pydantic
(one ``TypeAdapter`` per type, cached); without ``result_type``, ``data`` is the plain
JSON.  mcpkit (like other servers) wraps a non-object return value as ``{"result": v}``
because 2025-11-25 requires an object: when ``T`` does not accept the object itself, the
wrapped value is tried.  Validation failures are :class:`InvalidResultError`, naming the
tool and the first problem, never a pydantic traceback.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import TypeAdapter

from .errors import InvalidResultError, ToolError
from .models import CallToolResult


@functools.lru_cache(maxsize=256)
def _adapter(result_type: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(_compatible(result_type))


def _compatible(annotation: Any) -> Any:
    """pydantic refuses ``typing.TypedDict`` before Python 3.12; rebuild it with
    ``typing_extensions.TypedDict`` (same fields, same totality)."""
    import sys
    import typing

    if sys.version_info >= (3, 12) or not typing.is_typeddict(annotation):
        return annotation
    import typing_extensions

    hints = typing.get_type_hints(annotation, include_extras=True)
    required = getattr(annotation, "__required_keys__", frozenset(hints))
    fields = {
        name: (hint if name in required else typing_extensions.NotRequired[hint])
        for name, hint in hints.items()
    }
    return typing_extensions.TypedDict(annotation.__name__, fields)  # type: ignore[operator]


def tool_result(
    name: str, wire: dict[str, Any], result_type: object = None, raise_on_error: bool = False
) -> CallToolResult:
    """Wrap a wire result; fill :attr:`CallToolResult.data`; raise :class:`ToolError`."""
    result = CallToolResult(wire)
    if result.is_error:
        if raise_on_error:
            raise ToolError(name, result)
        return result
    structured = wire.get("structuredContent")
    if structured is None or result_type is None:
        result.data = structured
        return result
    adapter = _adapter(result_type)
    from pydantic import ValidationError

    try:
        result.data = adapter.validate_python(structured)
    except ValidationError as exc:
        if isinstance(structured, dict) and set(structured) == {"result"}:
            try:
                result.data = adapter.validate_python(structured["result"])
                return result
            except ValidationError:
                pass
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "(top)"
        raise InvalidResultError(
            f"tools/call {name}: structuredContent is not a {_name(result_type)} "
            f"({exc.error_count()} problem(s); at {where}: {first.get('msg')})"
        ) from None
    return result


def _name(result_type: object) -> str:
    return getattr(result_type, "__name__", None) or repr(result_type)


__all__ = ["tool_result"]


def typed_result(method: str, wire: dict[str, Any], result_type: Any) -> Any:
    """The result of a raw request (an extension's method) validated into ``result_type``
    (members it does not name, such as ``resultType`` and ``_meta``, are ignored);
    :class:`InvalidResultError` names the method and the first problem."""
    from pydantic import ValidationError

    try:
        return _adapter(result_type).validate_python(wire)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "(top)"
        raise InvalidResultError(
            f"{method}: the result is not a {_name(result_type)} "
            f"({exc.error_count()} problem(s); at {where}: {first.get('msg')})"
        ) from None
