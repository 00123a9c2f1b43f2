"""The keyword options of ``Server.tool``, ``Server.prompt`` and ``Server.resource``,
written once.  ``tool`` and ``prompt`` take them in their ``@overload``s too: bare
``@server.tool`` returns the function, ``@server.tool(...)`` returns a decorator, and
either way the decorated function keeps its own type for mypy and editors.

Imported only by type checkers.  :func:`~mcpkit.server.registry.make_tool` takes the
tool's options with their defaults; :func:`~mcpkit.server.registry.make_prompt` and
:func:`~mcpkit.server.registry.make_resource` read theirs from the mapping (every one
unset is None, but a resource's ``listed``, True)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from .apps import App
from .registry import TaskStart, TaskSupport


class PromptOptions(TypedDict, total=False):
    name: str | None
    title: str | None
    description: str | None
    meta: dict[str, Any] | None
    icons: list[dict[str, Any]] | None
    tags: Iterable[str] | None


class ResourceOptions(PromptOptions, total=False):
    mime_type: str | None
    size: int | None
    annotations: dict[str, Any] | None
    ttl_ms: int | None
    listed: bool


class ToolOptions(PromptOptions, total=False):
    annotations: dict[str, Any] | None
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    structured_output: bool | None
    mirror_structured: bool | None
    app: App | None
    task: TaskSupport
    task_start: TaskStart
    inline: bool
    timeout: float | None


def refuse_unknown_options(method: str, options: Mapping[str, Any], typed: Any) -> None:
    """Refuse a keyword the options TypedDict ``typed`` does not name when the method is
    called, as a signature listing them would (not later, at decoration)."""
    for key in options:
        if key not in typed.__optional_keys__:
            raise TypeError(f"Server.{method}() got an unexpected keyword argument {key!r}")
