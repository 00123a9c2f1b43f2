"""Deferred tool loading: for a large catalog the model gets one search tool instead of
every definition, and the tools it finds are offered from then on.

Definitions are the bulk of a model request when many servers are connected (each tool's
schema is sent on every step), and a long list also makes the model choose worse.  With
``toolSearch`` set (``true``, or a number of tools above which it applies) the loop offers
:data:`SEARCH_TOOL` plus the tools already loaded in this conversation.  The search is a
plain keyword match over names and descriptions (no index, no model call): it runs on
what the host already has, and a person can predict what it finds.  Its name has no
``__``, so it can never clash with a namespaced server tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .tools import HostTool

__all__ = ["SEARCH_TOOL", "search_tools"]

SEARCH_TOOL: dict[str, Any] = {
    "name": "search_tools",
    "description": (
        "Find tools by what they do. Many tools are available but not listed; "
        "search with a few keywords, and the tools found become callable on "
        "your next step."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "keywords, e.g. 'weather forecast'"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        },
        "required": ["query"],
    },
}
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("__", " ").replace("_", " ")))


def search_tools(tools: Iterable[HostTool], query: str, limit: int = 5) -> list[HostTool]:
    """The tools whose name or description share the most words with ``query``."""
    wanted = _words(query)
    scored = []
    for tool in tools:
        name_words = _words(tool.qualified_name)
        words = name_words | _words(tool.description)
        score = 2 * len(wanted & name_words) + len(wanted & words)
        if score:
            scored.append((-score, tool.qualified_name, tool))
    return [tool for _, _, tool in sorted(scored)[: max(1, min(limit, 20))]]
