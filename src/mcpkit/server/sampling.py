"""Sampling with tools (SEP-1577), the server's side: building the ``tools`` and
``toolChoice`` of a ``sampling/createMessage`` request and reading the model's answer.

``ctx.sample(..., tools=[...], tool_choice=...)`` sends the request (a real request on
2025-11-25, an input request of the MRTR round on 2026-07-28) and is refused with -32021
when the client did not declare ``sampling.tools``.  A tool is given as the name of one of
this server's tools (its listing is sent) or as a ``Tool`` object.  When the model asks
for tools (``stopReason: "toolUse"``), :func:`tool_uses` reads its ``tool_use`` blocks; the
server runs them and asks again with the conversation so far plus
:func:`tool_results_message` (the ``tool_result`` blocks, one per use, matched by id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import Server

__all__ = ["TOOL_CHOICES", "tool_result", "tool_results_message", "tool_uses"]

#: The ``toolChoice.mode`` values: the model decides, must call a tool, must not.
TOOL_CHOICES = ("auto", "required", "none")

#: The ``Tool`` members a sampling request carries (the listing's own ``_meta`` stays out).
_TOOL_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def sampling_tools(
    server: Server, tools: Iterable[str | Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The ``tools`` param: a registered tool's name becomes its listing; a mapping is a
    ``Tool`` already (it needs a ``name`` and an ``inputSchema`` object)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if isinstance(tool, str):
            entry = server.tools.get(tool)
            if entry is None:
                raise ValueError(f"sample(tools=...): no tool named {tool!r} on this server")
            out.append({k: entry.wire[k] for k in _TOOL_FIELDS if k in entry.wire})
            continue
        if not isinstance(tool.get("name"), str) or not isinstance(tool.get("inputSchema"), dict):
            raise ValueError(f"sample(tools=...): a tool needs a name and an inputSchema: {tool!r}")
        out.append(dict(tool))
    names = [t["name"] for t in out]
    if len(set(names)) != len(names):
        raise ValueError(f"sample(tools=...): tool names repeat: {names}")
    return out


def tool_choice(choice: str | Mapping[str, Any]) -> dict[str, Any]:
    """The ``toolChoice`` param from a mode name or a ``ToolChoice`` object."""
    value = {"mode": choice} if isinstance(choice, str) else dict(choice)
    mode = value.get("mode", "auto")
    if mode not in TOOL_CHOICES:
        raise ValueError(
            f"sample(tool_choice=...): mode must be one of {TOOL_CHOICES}, not {mode!r}"
        )
    return value


def tool_uses(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_use`` blocks of a ``CreateMessageResult`` (its content is one block or a
    list of them); empty when the model answered without tools."""
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]


def tool_result(
    tool_use_id: str,
    content: list[dict[str, Any]] | str,
    *,
    is_error: bool = False,
    structured: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``tool_result`` block answering the ``tool_use`` with id ``tool_use_id``;
    a string becomes one text block."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    block: dict[str, Any] = {"type": "tool_result", "toolUseId": tool_use_id, "content": blocks}
    if is_error:
        block["isError"] = True
    if structured is not None:
        block["structuredContent"] = structured
    return block


def tool_results_message(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The ``user`` message carrying the results of the model's tool uses."""
    return {"role": "user", "content": list(results)}
