"""Tool search for large catalogs (``server.enable_tool_search()``).

A model given hundreds of tool definitions spends its context on them and picks worse.
With tool search on, ``tools/list`` shows only the tools named in ``always`` plus two:

* ``search_tools(query)``: the best matches (name, description, input schema), ranked by
  BM25 over each tool's name, description and argument names (``rank_bm25``; ``pip
  install 'mcpkit[search]'``), or by a regular expression (``strategy="regex"``, no
  dependency);
* ``call_tool(name, arguments)``: calls one of them.  A tool can still be called directly
  by its name, so a client that learned the name from a search may do that too.

Like transforms and mounts this is a layer around the handlers (the outermost one, see
:mod:`.layers`), so it searches own, mounted, proxied and transformed tools alike, and it
keeps to what the caller may see (visibility rules apply underneath).  A real tool named
``search_tools`` or ``call_tool`` is shadowed by these.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..types.errors import McpError, invalid_params
from .content import json_text
from .handlers import _page

if TYPE_CHECKING:
    from .context import Context
    from .server import Server

__all__ = ["CALL_TOOL", "SEARCH_TOOL", "ToolSearch"]

Handler = Callable[["Context"], Awaitable[dict[str, Any]]]
SEARCH = "search_tools"
CALL = "call_tool"
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_MAX_PAGES = 1000

SEARCH_TOOL: dict[str, Any] = {
    "name": SEARCH,
    "description": "Search the available tools by what they do. Returns the best matches "
    "with their input schemas; call one with call_tool.",
    "inputSchema": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What the tool should do"}},
        "required": ["query"],
    },
    "annotations": {"readOnlyHint": True},
}
CALL_TOOL: dict[str, Any] = {
    "name": CALL,
    "description": "Call a tool found with search_tools, by its name, with its arguments.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name"},
            "arguments": {"type": "object", "description": "Its arguments"},
        },
        "required": ["name"],
    },
}


@dataclass
class ToolSearch:
    strategy: str = "bm25"
    always: frozenset[str] = frozenset()
    max_results: int = 8
    #: (corpus key, index) of the last BM25 index built: rebuilt only when tools change.
    _index: tuple[tuple[str, ...], Any] | None = field(default=None, repr=False)

    def rank(self, tools: list[dict[str, Any]], query: str) -> list[dict[str, Any]]:
        if self.strategy == "regex":
            try:
                pattern = re.compile(query, re.IGNORECASE)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
            by_name = [t for t in tools if pattern.search(str(t.get("name", "")))]
            rest = [t for t in tools if t not in by_name and pattern.search(_text(t))]
            return (by_name + rest)[: self.max_results]
        words = _words(query)
        if not words or not tools:
            return []
        key = tuple(_text(t) for t in tools)
        if self._index is None or self._index[0] != key:
            from ..types.extras import require

            bm25 = require("rank_bm25", "search", "BM25 tool search")
            self._index = (key, bm25.BM25Okapi([_words(text) or ["_"] for text in key]))
        scores = self._index[1].get_scores(words)
        ranked = sorted(range(len(tools)), key=lambda i: -float(scores[i]))
        return [tools[i] for i in ranked if float(scores[i]) > 0][: self.max_results]


def _words(text: str) -> list[str]:
    """Lower-case words, ``snake_case`` and ``camelCase`` split."""
    return [w.lower() for w in _WORD.findall(text)]


def _text(tool: dict[str, Any]) -> str:
    schema = tool.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    args = " ".join(props) if isinstance(props, dict) else ""
    return f"{tool.get('name', '')} {tool.get('title', '')} {tool.get('description', '')} {args}"


def enable(server: Server, *, strategy: str, always: Iterable[str], max_results: int) -> ToolSearch:
    if strategy not in ("bm25", "regex"):
        raise ValueError("strategy must be 'bm25' or 'regex'")
    if strategy == "bm25":
        from ..types.extras import require

        require("rank_bm25", "search", "BM25 tool search")  # say so now, not at first use
    config = ToolSearch(strategy, frozenset(always), max_results)
    server.tool_search = config
    from .layers import rebuild

    rebuild(server)
    server._changed("tools")
    return config


def layer(server: Server, inner: dict[str, Handler]) -> dict[str, Handler]:
    list_inner, call_inner = inner["tools/list"], inner["tools/call"]
    config = server.tool_search  # (the layer is rebuilt when it changes)
    assert config is not None

    async def every_tool(ctx: Context) -> list[dict[str, Any]]:
        method, params = ctx.method, ctx.params
        ctx.method = "tools/list"  # (a mounted child is asked with the method on ctx)
        items: list[dict[str, Any]] = []
        cursor: object = None
        try:
            for _ in range(_MAX_PAGES):
                ctx.params = {} if cursor is None else {"cursor": cursor}
                page = await list_inner(ctx)
                items.extend(t for t in page.get("tools") or [] if isinstance(t, dict))
                cursor = page.get("nextCursor")
                if not isinstance(cursor, str):
                    break
        finally:
            ctx.method, ctx.params = method, params
        return [t for t in items if t.get("name") not in (SEARCH, CALL)]

    async def tools_list(ctx: Context) -> dict[str, Any]:
        shown = [t for t in await every_tool(ctx) if t["name"] in config.always]
        return _page(server, ctx, "tools", [*shown, SEARCH_TOOL, CALL_TOOL])

    async def tools_call(ctx: Context) -> dict[str, Any]:
        name = ctx.params.get("name")
        arguments = ctx.params.get("arguments") or {}
        if name == SEARCH:
            query = arguments.get("query") if isinstance(arguments, dict) else None
            if not isinstance(query, str) or not query.strip():
                return _error("search_tools needs a non-empty string query")
            try:
                found = config.rank(await every_tool(ctx), query)
            except ValueError as exc:
                return _error(str(exc))
            matches = [
                {k: t[k] for k in ("name", "description", "inputSchema") if k in t} for t in found
            ]
            structured = {"tools": matches}
            return {
                "content": [{"type": "text", "text": json_text(structured)}],
                "structuredContent": structured,
            }
        if name == CALL:
            target = arguments.get("name") if isinstance(arguments, dict) else None
            given = arguments.get("arguments", {}) if isinstance(arguments, dict) else None
            if not isinstance(target, str) or target in (SEARCH, CALL):
                return _error("call_tool needs the name of a tool found with search_tools")
            if not isinstance(given, dict):
                return _error("call_tool arguments must be an object")
            params = ctx.params
            ctx.params = {**params, "name": target, "arguments": given}
            try:
                return await call_inner(ctx)
            except McpError as exc:
                if exc.code != invalid_params("").code:
                    raise
                return _error(f"{exc.message} (search_tools lists the tools there are)")
            finally:
                ctx.params = params
        return await call_inner(ctx)

    return {"tools/list": tools_list, "tools/call": tools_call}


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}
