"""How the client commands print: text for people, JSON for scripts.

JSON goes to stdout as UTF-8 bytes whatever the locale (non-ASCII text stays readable, not
``\\u`` escapes), with sorted keys where the command promises a stable report.
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO, TextIO


def emit_json(value: object, *, sort_keys: bool = False) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys) + "\n"
    sys.stdout.flush()
    write_all(sys.stdout.buffer, text.encode("utf-8"))
    sys.stdout.buffer.flush()


def write_all(out: BinaryIO, data: bytes) -> None:
    """All of ``data``: under ``python -u`` (PYTHONUNBUFFERED) stdout's binary layer is a
    raw file whose ``write`` may take only part of a large buffer (a pipe's capacity),
    and the rest must be written again, not dropped.  A closed reader raises
    BrokenPipeError here, as for text output."""
    view = memoryview(data)
    while view:
        written = out.write(view)
        view = view[written if written is not None else len(view) :]


def print_listing(server: dict[str, Any], listing: dict[str, Any], dropped: dict[str, str]) -> None:
    name = server["name"] or "(unnamed server)"
    print(
        f"{name} {server['version'] or ''}".rstrip()
        + f"  [protocol {server['protocolVersion']}, {server['era']} era]"
    )
    if server["instructions"]:
        print(f"  {first_line(server['instructions'])}")
    print(f"\nTools ({len(listing['tools'])}):")
    for tool in listing["tools"]:
        print(f"  {tool['name']}({signature(tool.get('inputSchema') or {})})")
        if tool.get("description"):
            print(f"      {first_line(tool['description'])}")
    for tool_name, why in dropped.items():
        print(f"  (dropped {tool_name}: {why})")
    print(f"\nPrompts ({len(listing['prompts'])}):")
    for prompt in listing["prompts"]:
        arguments = ", ".join(
            a["name"] + ("" if a.get("required") else "?") for a in prompt.get("arguments") or []
        )
        print(f"  {prompt['name']}({arguments})" + _desc(prompt))
    print(f"\nResources ({len(listing['resources'])}):")
    for res in listing["resources"]:
        mime = f" [{res['mimeType']}]" if res.get("mimeType") else ""
        print(f"  {res['uri']}{mime}" + _desc(res))
    if listing["resourceTemplates"]:
        print(f"\nResource templates ({len(listing['resourceTemplates'])}):")
        for tpl in listing["resourceTemplates"]:
            print(f"  {tpl['uriTemplate']}" + _desc(tpl))


def print_inspection(report: dict[str, Any]) -> None:
    """The human form of ``mcpkit inspect``: everything ``list`` shows, with full schemas."""
    server = report["server"]
    print_listing(server, report, report.get("droppedTools") or {})
    print("\nCapabilities:")
    print(_indent(json.dumps(server["capabilities"], indent=2, ensure_ascii=False)))
    for tool in report["tools"]:
        print(f"\nTool {tool['name']}")
        for key in ("title", "description"):
            if tool.get(key):
                print(f"  {key}: {tool[key]}")
        for key in ("inputSchema", "outputSchema", "annotations", "execution"):
            if tool.get(key):
                print(f"  {key}:")
                print(_indent(json.dumps(tool[key], indent=2, ensure_ascii=False), 4))


def print_result(result: dict[str, Any], out: TextIO) -> None:
    """A tool result's content blocks, one after another."""
    blocks = result.get("content") or []
    texts = 0
    for block in blocks:
        texts += print_block(block, out)
    if "structuredContent" in result and not texts:
        print(json.dumps(result["structuredContent"], indent=2, ensure_ascii=False), file=out)


def print_block(block: dict[str, Any], out: TextIO) -> int:
    """One content block; returns 1 for a text block (so structured output is not doubled)."""
    kind = block.get("type")
    if kind == "text":
        print(block.get("text", ""), file=out)
        return 1
    if kind in ("image", "audio"):
        size = len(block.get("data", "")) * 3 // 4
        print(f"[{kind} {block.get('mimeType', '?')}, ~{size} bytes]", file=out)
    elif kind == "resource":
        print_contents(block.get("resource") or {}, out)
    elif kind == "resource_link":
        print(f"[link {block.get('uri')}]", file=out)
    else:
        print(json.dumps(block, ensure_ascii=False), file=out)
    return 0


def print_contents(item: dict[str, Any], out: TextIO) -> None:
    """A resource's contents item: its text, or a line describing its blob."""
    if "text" in item:
        print(item["text"], file=out)
    else:
        size = len(item.get("blob", "")) * 3 // 4
        print(f"[blob {item.get('uri')} {item.get('mimeType', '?')}, ~{size} bytes]", file=out)


def print_prompt(result: dict[str, Any], out: TextIO) -> None:
    if result.get("description"):
        print(f"# {result['description']}", file=out)
    for message in result.get("messages") or []:
        print(f"[{message.get('role', '?')}]", file=out)
        content = message.get("content")
        for block in content if isinstance(content, list) else [content or {}]:
            print_block(block, out)


def signature(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for key, prop in props.items():
        kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
        parts.append(f"{key}{'' if key in required else '?'}: {kind}")
    return ", ".join(parts)


def first_line(text: str) -> str:
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if len(line) <= 100 else line[:99] + "…"


def _desc(item: dict[str, Any]) -> str:
    text = item.get("description") or item.get("title") or ""
    return f"  - {first_line(text)}" if text else ""


def _indent(text: str, by: int = 2) -> str:
    return "\n".join(" " * by + line for line in text.splitlines())
