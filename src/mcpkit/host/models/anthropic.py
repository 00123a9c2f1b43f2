"""Anthropic Messages API adapter (``POST /v1/messages``) over httpx.

The neutral format is close to this API's own: text, ``tool_use`` and ``tool_result``
blocks map one to one; images become ``{"type": "image", "source": {"type": "base64",
...}}`` (also inside tool results, which the API accepts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from .base import HttpModel, Message, ModelError, ModelReply, Sinks, ToolCall, tool_call

__all__ = ["AnthropicModel"]

API_VERSION = "2023-06-01"


def _block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "image":
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": block["mimeType"], "data": block["data"]},
        }
    if kind == "tool_result":
        out: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block["tool_use_id"],
            "content": [_block(b) for b in block.get("content", [])],
        }
        if block.get("is_error"):
            out["is_error"] = True
        return out
    return dict(block)


class AnthropicModel(HttpModel):
    default_base_url = "https://api.anthropic.com"
    default_model = "claude-sonnet-4-5"
    api_key_env = "ANTHROPIC_API_KEY"
    endpoint = "/v1/messages"
    label = "Anthropic API"

    def headers(self, key: str) -> dict[str, str]:
        return {
            "x-api-key": key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }

    def conversation(self, messages: list[Message], system: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "messages": [
                {"role": m["role"], "content": [_block(b) for b in m["content"]]} for m in messages
            ]
        }
        if system:
            out["system"] = system
        return out

    def tool_spec(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "input_schema": tool["input_schema"],
        }

    def read_reply(self, data: Any) -> ModelReply:
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in data.get("content") or []:
            if block.get("type") == "text":
                text.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                calls.append(
                    ToolCall(str(block["id"]), str(block["name"]), dict(block.get("input") or {}))
                )
        return ModelReply(
            "".join(text),
            tuple(calls),
            str(data.get("stop_reason") or ""),
            dict(data.get("usage") or {}),
        )

    async def read_stream(self, events: AsyncIterator[dict[str, Any]], to: Sinks) -> ModelReply:
        """Text deltas go to ``on_text`` as they come; ``tool_use`` input arrives as JSON
        fragments, joined and parsed at the end."""
        blocks: dict[int, dict[str, Any]] = {}
        stop, usage = "", dict[str, Any]()
        async for event in events:
            kind = event.get("type")
            if kind == "content_block_start":
                block = dict(event.get("content_block") or {})
                block["partial"] = ""
                blocks[int(event.get("index", len(blocks)))] = block
            elif kind == "content_block_delta":
                block = blocks.setdefault(
                    int(event.get("index", 0)), {"type": "text", "partial": ""}
                )
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta":
                    block["text"] = block.get("text", "") + str(delta.get("text", ""))
                    to.on_text(str(delta.get("text", "")))
                elif delta.get("type") == "input_json_delta":
                    block["partial"] += str(delta.get("partial_json", ""))
                    if to.on_tool_input is not None and block.get("type") == "tool_use":
                        to.on_tool_input(
                            str(block.get("id")), str(block.get("name")), block["partial"]
                        )
            elif kind == "message_delta":
                stop = str((event.get("delta") or {}).get("stop_reason") or stop)
                usage.update(event.get("usage") or {})
            elif kind == "message_start":
                usage.update((event.get("message") or {}).get("usage") or {})
            elif kind == "error":
                raise ModelError(f"{self.api} streamed an error: {event.get('error')}")
        text, calls = [], []
        for _, block in sorted(blocks.items()):
            if block.get("type") == "text":
                text.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                name = str(block.get("name"))
                calls.append(tool_call(str(block.get("id")), name, block["partial"], self.api))
        return ModelReply("".join(text), tuple(calls), stop, usage)
