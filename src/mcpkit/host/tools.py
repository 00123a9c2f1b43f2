"""One tool list for a model, built from many servers' lists.

* **Namespacing.** A tool is exposed as ``server__tool`` (:func:`exposed_name`, shared with
  the client's multi-server view in :mod:`mcpkit.protocol.naming`): model-safe, unique, and
  mapped back to exactly one (server, tool) pair, so two servers may both have an ``add``.
* **Schemas.** Models get a self-contained input schema: local ``$ref``\\ s (``#/$defs/...``,
  ``#/definitions/...``) are inlined, recursion is cut at a fixed depth, and network refs
  are *never* fetched (spec: no automatic dereferencing), just replaced by an open schema
  and flagged.  ``x-mcp-header`` annotations are HTTP plumbing for the client, so they are
  stripped from what the model sees.
* **Visibility.** A tool whose ``_meta.ui.visibility`` excludes ``"model"`` is for its MCP
  App only and is left out of the model's list.
* **Flags.** Descriptions are the server's words and may try to instruct the model (tool
  poisoning).  Hidden characters, instruction-like markup and very long text are flagged so
  the person sees them in consent prompts; nothing is silently rewritten.  The detector,
  :func:`~mcpkit.protocol.poisoning.tool_flags`, lives in ``protocol`` so the gateway
  shares it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..protocol.naming import exposed_name
from ..protocol.poisoning import tool_flags
from .apps import callable_by_app, tool_ui_uri, visible_to_model

__all__ = ["HostTool", "ToolIndex", "exposed_name", "model_schema", "tool_flags"]

_MAX_DEPTH = 8


@dataclass(frozen=True)
class HostTool:
    """A tool of one server, as the host shows it to a model and to a person."""

    server: str
    name: str  # the server's own name
    qualified_name: str  # what the model calls
    tool: dict[str, Any]  # the definition as the server sent it
    schema: dict[str, Any]  # self-contained, for the model
    flags: tuple[str, ...] = ()
    ui_resource_uri: str | None = None
    for_model: bool = True

    @property
    def description(self) -> str:
        text = self.tool.get("description")
        return text if isinstance(text, str) else ""

    @property
    def annotations(self) -> dict[str, Any]:
        raw = self.tool.get("annotations")
        return dict(raw) if isinstance(raw, dict) else {}

    def for_api(self) -> dict[str, Any]:
        """Neutral form the model adapters translate: name, description, input_schema."""
        return {
            "name": self.qualified_name,
            "description": self.description,
            "input_schema": self.schema,
        }


def model_schema(schema: Any, notes: list[str] | None = None) -> dict[str, Any]:
    """A self-contained copy of an input schema: local refs inlined, network refs not
    fetched, ``x-mcp-header`` removed, root ``type: object`` guaranteed."""
    notes = notes if notes is not None else []
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    root = copy.deepcopy(schema)
    out = _resolve(root, root, notes, depth=0, stack=())
    if not isinstance(out, dict):
        out = {}
    out.pop("$defs", None)
    out.pop("definitions", None)
    out.pop("$schema", None)
    out.pop("$id", None)
    if out.get("type") != "object":
        out["type"] = "object"
    out.setdefault("properties", {})
    return out


def _pointer(root: Any, ref: str) -> Any:
    node = root
    for raw in ref[2:].split("/") if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _resolve(node: Any, root: Any, notes: list[str], *, depth: int, stack: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_resolve(item, root, notes, depth=depth, stack=stack) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if not ref.startswith("#"):
            notes.append(f"network $ref {ref!r} was not followed")
            target: Any = {"description": f"(schema at {ref} not fetched)"}
        elif ref in stack or depth >= _MAX_DEPTH:
            notes.append(f"recursive $ref {ref!r} cut")
            target = {"description": "(recursive structure)"}
        else:
            found = _pointer(root, ref)
            if found is None:
                notes.append(f"unresolvable $ref {ref!r}")
                target = {}
            else:
                target = _resolve(
                    copy.deepcopy(found), root, notes, depth=depth + 1, stack=(*stack, ref)
                )
        merged = dict(target) if isinstance(target, dict) else {}
        merged.update(_resolve(rest, root, notes, depth=depth, stack=stack))
        return merged
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "x-mcp-header":
            continue
        if key in ("$defs", "definitions") and depth > 0:
            continue
        out[key] = _resolve(value, root, notes, depth=depth, stack=stack)
    return out


#: What ends a gateway's or proxy's name prefix (``dice_``, ``dice__``, ``dice.``, ...).
_PREFIX_ENDS = frozenset("_-.:/")


@dataclass
class ToolIndex:
    """Exposed names <-> (server, tool), rebuilt whenever a server's list changes."""

    tools: dict[str, HostTool] = field(default_factory=dict)
    by_server: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def build(cls, listings: Iterable[tuple[str, list[dict[str, Any]]]]) -> ToolIndex:
        """``listings``: (server, tools) per server, servers in a stable order."""
        index = cls()
        taken: set[str] = set()
        for server, tools in listings:
            for tool in tools:
                name = tool.get("name")
                if not isinstance(name, str):
                    continue
                exposed = exposed_name(server, name, taken)
                taken.add(exposed)
                notes: list[str] = []
                schema = model_schema(tool.get("inputSchema"), notes)
                flags = tool_flags(tool) + [f"schema: {n}" for n in dict.fromkeys(notes)]
                index.tools[exposed] = HostTool(
                    server=server,
                    name=name,
                    qualified_name=exposed,
                    tool=tool,
                    schema=schema,
                    flags=tuple(flags),
                    ui_resource_uri=tool_ui_uri(tool),
                    for_model=visible_to_model(tool),
                )
                index.by_server[(server, name)] = exposed
        return index

    def get(self, exposed: str) -> HostTool | None:
        return self.tools.get(exposed)

    def find(self, server: str, name: str) -> HostTool | None:
        exposed = self.by_server.get((server, name))
        return self.tools.get(exposed) if exposed else None

    def find_for_app(self, server: str, name: str) -> HostTool | None:
        """``server``'s tool an MCP App means by ``name``: the tool of that name, else the
        one app-callable tool whose name is ``name`` behind a prefix (``dice_roll`` for
        ``roll``), which is how a gateway in front of the App's own server names it; None
        when no tool or several fit (the caller refuses, never guesses).  An App can call
        any app-callable tool of its server by its full name, so this grants nothing new."""
        exact = self.find(server, name)
        if exact is not None:
            return exact
        fits = [
            tool
            for tool in self.tools.values()
            if tool.server == server
            and len(tool.name) > len(name)
            and tool.name.endswith(name)
            and tool.name[-len(name) - 1] in _PREFIX_ENDS
            and callable_by_app(tool.tool)
        ]
        return fits[0] if len(fits) == 1 else None

    def for_model(self) -> list[HostTool]:
        return [t for t in self.tools.values() if t.for_model]
