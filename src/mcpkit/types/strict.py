"""Strict configuration documents: a parsed file (TOML or JSON) checked against a
pydantic model whose models forbid unknown keys, every mistake reported with its path.

:func:`check_document` validates and raises one :class:`~mcpkit.types.errors.ConfigError`
listing every mistake, one per line: the key's path as the file spells it
(``rule[0].principal``), and for an unknown key the closest known one (``did you mean
'principals'?``).  In a TOML document, a key that is unknown where it stands but known in
an enclosing table, or any key of a free-form table (tokens, headers, environment) that
an enclosing table knows, is named as misplaced: in TOML every ``key = value`` after a
``[table]`` header belongs to that table, so a top-level key written below one silently
moves into it.

pydantic is imported when a document is checked, not when this module is.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["check_document", "dotted", "suggest"]

Loc = tuple[int | str, ...]


def dotted(loc: Sequence[int | str]) -> str:
    """A location as the file spells it: ``rule[0].principals``, ``auth.tokens``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def suggest(word: str, known: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known``, or nothing."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types an annotation may hold (Optional, unions and Annotated opened)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _is_model(value: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(value, type) and issubclass(value, BaseModel)


def _field_type(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info.annotation
    return None


def _step(annotation: Any, part: int | str) -> Any:
    """The type found one step (a key or an index) inside ``annotation``."""
    for kind in _unwrap(annotation):
        if _is_model(kind) and isinstance(part, str):
            return _field_type(kind, part)
        origin = typing.get_origin(kind)
        args = typing.get_args(kind)
        if origin in (list, tuple) and isinstance(part, int) and args:
            return args[0]
        if origin is dict and isinstance(part, str) and len(args) == 2:
            return args[1]
    return None


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    current: Any = root
    for part in loc:
        current = _step(current, part)
        if current is None:
            return None
    models = [kind for kind in _unwrap(current) if _is_model(kind)]
    return models[0] if models else None


def _keys_of(model: type[BaseModel]) -> list[str]:
    """The keys a table of ``model`` takes (each field's alias, else its name)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def _misplaced(root: type[BaseModel], loc: Loc, key: str) -> str | None:
    """Why ``key`` found at ``loc`` belongs to an enclosing table, or None."""
    for depth in range(len(loc) - 1, -1, -1):
        outer = loc[:depth]
        if isinstance(loc[depth], int):
            continue  # (an array item is not a table a key could have escaped to)
        model = _model_at(root, outer)
        if model is None or key not in _keys_of(model):
            continue
        fix = f"move it up into [{dotted(outer)}]" if outer else "move it above the first [table]"
        home = f"a key of [{dotted(outer)}]" if outer else "a top-level key"
        return (
            f"{dotted((*loc, key))}: {key!r} is {home}, but TOML put it in "
            f"[{dotted(loc)}] because it comes after that table's header; {fix}"
        )
    return None


def _free_tables(root: type[BaseModel], data: object, loc: Loc = ()) -> Iterator[Loc]:
    """The locations of the free-form tables (``dict[str, ...]`` fields) in ``data``."""
    annotation: Any = _model_at(root, loc) if loc else root
    model = annotation if _is_model(annotation) else None
    if model is None or not isinstance(data, dict):
        return
    for key, value in data.items():
        field = _field_type(model, key)
        if field is None:
            continue
        here: Loc = (*loc, key)
        kinds = _unwrap(field)
        if isinstance(value, dict) and any(typing.get_origin(k) is dict for k in kinds):
            yield here
        elif isinstance(value, dict):
            yield from _free_tables(root, value, here)
        elif isinstance(value, list):
            items = [typing.get_args(k)[0] for k in kinds if typing.get_args(k)]
            free = any(typing.get_origin(item) is dict for item in items)
            for index, item in enumerate(value):
                if free and isinstance(item, dict):
                    yield (*here, index)  # (an array of free-form tables: [[guardrail]])
                else:
                    yield from _free_tables(root, item, (*here, index))


def _lookup(data: Any, loc: Loc) -> Any:
    for part in loc:
        data = data[part]
    return data


def _misplaced_keys(root: type[BaseModel], data: object) -> list[str]:
    """Keys of free-form tables that an enclosing table knows: the TOML trap of a
    top-level key written below a ``[table]`` header (``default_effect`` after
    ``[auth.tokens]`` becomes a token)."""
    found = []
    for loc in _free_tables(root, data):
        for key in _lookup(data, loc):
            reason = _misplaced(root, loc, key) if isinstance(key, str) else None
            if reason is not None:
                found.append(reason)
    return found


def _redacted(loc: Loc, secret_tables: Sequence[Loc]) -> Loc:
    """``loc`` with a key of a secret table (the tokens of ``[auth.tokens]``) cut short:
    an error message must not carry a credential."""
    for table in secret_tables:
        size = len(table)
        if loc[:size] == tuple(table) and len(loc) > size:
            return (*table, f"{str(loc[size])[:4]}...", *loc[size + 1 :])
    return loc


def _describe(root: type[BaseModel], error: Any, secret_tables: Sequence[Loc], toml: bool) -> str:
    loc: Loc = _redacted(tuple(error["loc"]), secret_tables)
    if error["type"] == "extra_forbidden":
        key, where = loc[-1], loc[:-1]
        if toml and isinstance(key, str):
            reason = _misplaced(root, where, key)
            if reason is not None:
                return reason
        model = _model_at(root, where) if where else root
        hint = suggest(str(key), _keys_of(model)) if model is not None else ""
        value = error.get("input")
        what = "table" if toml and _tables(value) else "key"
        shown = f"[{dotted(loc)}]" if what == "table" else dotted(loc)
        return f"unknown {what} {shown}{hint}"
    message = str(error["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return f"{dotted(loc) or 'the document'}: {message}"


def _tables(value: object) -> bool:
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, dict) for v in value)
    return isinstance(value, dict)


def check_document(
    model: type[BaseModel],
    data: object,
    *,
    secret_tables: Sequence[Loc] = (),
    toml: bool = False,
) -> None:
    """Validate ``data`` against ``model``: a :class:`ConfigError` listing every unknown,
    misplaced or mistyped key, one per line, each with its dotted path.  The keys of the
    ``secret_tables`` (credentials) are shown cut short.  ``toml``: the document is TOML,
    where a key can land in the table above it, so such keys are looked for and named."""
    from pydantic import ValidationError

    problems = _misplaced_keys(model, data) if toml else []
    try:
        model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems += [_describe(model, e, secret_tables, toml) for e in errors]
    unique = list(dict.fromkeys(problems))
    if unique:
        raise ConfigError("\n".join(unique))
