"""Tool transforms: reshape a tool without rewriting it (``server.transform_tool``).

A transform is a rule applied on the way through, like a mount: ``tools/list`` shows the
reshaped tool, and ``tools/call`` of the new shape is translated back to the original
one and answered by whatever serves it (an own tool, a mounted server's, a proxied
upstream's).  So it works on tools that do not exist yet when the rule is made.

What a transform may change:

* the tool's name (the original name then disappears), title and description;
* per argument (``args={"old": {...}}``): ``name`` (renamed in the schema; the call is
  translated back), ``description``, ``default`` (in the schema, no longer required,
  filled in when the caller leaves it out) and ``hide`` (gone from the schema; the
  default is always sent, whatever the caller passes, so a hidden argument is fixed by
  the server, never by the model; without a default it is simply never sent);
* ``wrap``: ``fn(arguments, call)`` receives the caller's arguments (new names) and
  ``call``, an async function forwarding (new-named) arguments to the original tool and
  returning its ``CallToolResult`` dict; it returns the result to send (validate before,
  post-process after, or answer itself).  A ``ToolError`` it raises is an ``isError``
  result.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..types.errors import invalid_params
from .handlers import _page
from .registry import ToolError

if TYPE_CHECKING:
    from .context import Context
    from .server import Server

__all__ = ["ToolTransform", "install"]

Handler = Callable[["Context"], Awaitable[dict[str, Any]]]
Call = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Wrapper = Callable[[dict[str, Any], Call], Awaitable[dict[str, Any]] | dict[str, Any]]
_ARG_KEYS = frozenset({"name", "description", "default", "hide"})
_MAX_PAGES = 1000


@dataclass(frozen=True)
class ToolTransform:
    source: str
    name: str
    title: str | None = None
    description: str | None = None
    args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    wrap: Wrapper | None = None

    def __post_init__(self) -> None:
        for old, spec in self.args.items():
            unknown = set(spec) - _ARG_KEYS
            if unknown:
                raise ValueError(f"argument {old!r}: unknown keys {sorted(unknown)}")
        shown = [str(s.get("name", old)) for old, s in self.args.items() if not s.get("hide")]
        if len(shown) != len(set(shown)):
            raise ValueError(f"two arguments of {self.source!r} would have the same name")

    def reshape(self, wire: dict[str, Any]) -> dict[str, Any]:
        """The tool's listing entry, transformed."""
        out = copy.deepcopy(wire)
        out["name"] = self.name
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        schema = out.get("inputSchema")
        if not isinstance(schema, dict):
            return out
        props = schema.get("properties")
        props = dict(props) if isinstance(props, dict) else {}
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        renamed: dict[str, Any] = {}
        for key, value in props.items():
            spec = self.args.get(key)
            if spec is None:
                renamed[key] = value
                continue
            if spec.get("hide"):
                if key in required:
                    required.remove(key)
                continue
            new = str(spec.get("name", key))
            prop = dict(value) if isinstance(value, dict) else {}
            if "description" in spec:
                prop["description"] = spec["description"]
            if "default" in spec:
                prop["default"] = spec["default"]
                if key in required:
                    required.remove(key)
            if key in required:
                required[required.index(key)] = new
            renamed[new] = prop
        schema["properties"] = renamed
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
        return out

    def arguments_for_source(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The caller's arguments (new names) as the original tool takes them."""
        out: dict[str, Any] = {}
        taken: set[str] = set()
        for old, spec in self.args.items():
            new = str(spec.get("name", old))
            taken.add(new)
            if spec.get("hide"):
                if "default" in spec:
                    out[old] = copy.deepcopy(spec["default"])
            elif new in given:
                out[old] = given[new]
            elif "default" in spec:
                out[old] = copy.deepcopy(spec["default"])
        for key, value in given.items():
            if key not in taken and key not in self.args:
                out[key] = value
        return out


def install(server: Server, rule: ToolTransform) -> ToolTransform:
    """Apply ``rule`` on ``server`` (in place of an earlier rule for the same tool), unless
    another rule already produces a tool of its name."""
    for other in server.tool_transforms.values():
        if other.name == rule.name and other.source != rule.source:
            raise ValueError(f"another transform already produces a tool named {rule.name!r}")
    server.tool_transforms.pop(rule.source, None)
    server.tool_transforms[rule.source] = rule
    from .layers import rebuild

    rebuild(server)
    server._changed("tools")
    return rule


def layer(server: Server, inner: dict[str, Handler]) -> dict[str, Handler]:
    """``tools/list`` and ``tools/call`` with ``server.tool_transforms`` applied."""
    list_inner, call_inner = inner["tools/list"], inner["tools/call"]

    async def tools_list(ctx: Context) -> dict[str, Any]:
        base = dict(ctx.params)
        items: list[Any] = []
        cursor: object = None
        last: dict[str, Any] = {}
        for _ in range(_MAX_PAGES):
            ctx.params = {k: v for k, v in base.items() if k != "cursor"}
            if cursor is not None:
                ctx.params["cursor"] = cursor
            last = await list_inner(ctx)
            items.extend(last.get("tools") or [])
            cursor = last.get("nextCursor")
            if not isinstance(cursor, str):
                break
        ctx.params = base
        rules = server.tool_transforms
        shown = [
            rules[t["name"]].reshape(t)
            if isinstance(t, dict) and isinstance(t.get("name"), str) and t["name"] in rules
            else t
            for t in items
        ]
        result = _page(server, ctx, "tools", shown)
        if "ttlMs" in last and "ttlMs" in result:
            result["ttlMs"], result["cacheScope"] = last["ttlMs"], last.get("cacheScope")
        return result

    async def tools_call(ctx: Context) -> dict[str, Any]:
        name = ctx.params.get("name")
        rule = next((r for r in server.tool_transforms.values() if r.name == name), None)
        if rule is None:
            if isinstance(name, str) and name in server.tool_transforms:
                raise invalid_params(f"Unknown tool: {name}", {"name": name})  # renamed away
            return await call_inner(ctx)
        given = ctx.params.get("arguments")
        if given is None:
            given = {}
        if not isinstance(given, dict):
            raise invalid_params("tools/call arguments must be an object")
        params = dict(ctx.params)

        async def call(arguments: dict[str, Any]) -> dict[str, Any]:
            ctx.params = {
                **params,
                "name": rule.source,
                "arguments": rule.arguments_for_source(arguments),
            }
            try:
                return await call_inner(ctx)
            finally:
                ctx.params = params

        if rule.wrap is None:
            return await call(given)
        try:
            result = rule.wrap(dict(given), call)
            if inspect.isawaitable(result):
                result = await result
        except ToolError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        return dict(result)

    return {"tools/list": tools_list, "tools/call": tools_call}
