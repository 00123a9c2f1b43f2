"""Parameter descriptions from a function's docstring (``Args:`` and the like).

Google (``Args:``), NumPy (``Parameters`` / ``----------``) and reST (``:param x:``)
sections are parsed by ``docstring_parser`` (a small, pure-Python, well-kept parser), so a
ported tool keeps the argument help it already has.  A description given with
``Annotated[..., Field(description=...)]`` wins.  The parser is imported only for a
docstring that has such a section, so ``import mcpkit`` and servers without them do not
pay for it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["describe"]

_MARKERS = ("Args:", "Arguments:", "Parameters\n", ":param ", "Keyword Args:")


def describe(fn: Callable[..., object]) -> tuple[str | None, dict[str, str]]:
    """(the description without its parameter section, {parameter: description})."""
    doc = inspect.getdoc(fn)
    if not doc:
        return None, {}
    doc = doc.strip()
    if not any(marker in doc for marker in _MARKERS):
        return doc, {}
    import docstring_parser

    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return doc, {}
    params = {p.arg_name: p.description.strip() for p in parsed.params if p.description}
    if not params:
        return doc, {}
    text = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    return text or None, params


def add_descriptions(schema: dict[str, Any], params: dict[str, str]) -> None:
    """Fill ``description`` of the schema's top-level properties that have none."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, text in params.items():
        prop = properties.get(name)
        if isinstance(prop, dict) and "description" not in prop:
            prop["description"] = text
