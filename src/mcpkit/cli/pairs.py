"""The arguments of ``mcpkit call`` and ``mcpkit prompt`` as typed on the command line:
``key=value`` converted by the input schema's type (a ``string`` stays a string even if it
looks like a number), ``key:=JSON`` as raw JSON; a wrong value is a usage error naming
the field and the type it wants."""

from __future__ import annotations

import json
from typing import Any

from .exits import UsageError

__all__ = ["convert", "json_object", "parse_pairs"]


def json_object(text: str, what: str) -> dict[str, Any]:
    try:
        loaded = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what} is not JSON: {exc}") from None
    if not isinstance(loaded, dict):
        raise UsageError(f"{what} must be a JSON object")
    return loaded


def parse_pairs(pairs: list[str], schema: dict[str, Any], owner: str = "") -> dict[str, Any]:
    """``key=value`` (converted by the schema's type) and ``key:=JSON`` words."""
    props = schema.get("properties") or {}
    closed = bool(props) and not schema.get("additionalProperties")
    out: dict[str, Any] = {}
    for pair in pairs:
        if ":=" in pair and pair.index(":=") < pair.find("=") + 1:
            key, _, raw = pair.partition(":=")
            try:
                out[key] = json.loads(raw)
            except ValueError as exc:
                raise UsageError(f"{key}:= is not JSON: {exc}") from None
            continue
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {pair!r}")
        prop = props.get(key)
        if prop is None and closed:
            raise UsageError(
                f"{owner + ' has ' if owner else ''}no argument {key!r}; "
                f"it takes: {', '.join(props)}"
            )
        out[key] = convert(key, text, _type_of(prop))
    return out


def _type_of(prop: object) -> Any:
    if not isinstance(prop, dict):
        return None
    kind = prop.get("type")
    if isinstance(kind, list):  # ["integer", "null"]: the non-null one
        kinds = [k for k in kind if k != "null"]
        return kinds[0] if len(kinds) == 1 else None
    if kind is None:
        for key in ("anyOf", "oneOf"):  # Optional[int] from pydantic: anyOf [int, null]
            options = [o.get("type") for o in prop.get(key) or [] if isinstance(o, dict)]
            options = [o for o in options if o and o != "null"]
            if len(options) == 1:
                return options[0]
    return kind


def convert(key: str, text: str, kind: object) -> Any:
    """``text`` as the JSON type ``kind``; a wrong value names the field and the type."""
    if kind == "string":
        return text
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise UsageError(f"{key}: expected a boolean (true or false), got {text!r}")
    if kind in ("integer", "number"):
        try:
            if kind == "integer":
                return int(text)
            return float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            article = "an" if kind == "integer" else "a"
            raise UsageError(f"{key}: expected {article} {kind}, got {text!r}") from None
    if kind in ("array", "object") or kind is None:
        try:
            return json.loads(text)
        except ValueError:
            if kind is None:
                return text
            raise UsageError(f"{key}: expected JSON for an {kind}, got {text!r}") from None
    return text
