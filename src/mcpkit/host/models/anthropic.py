"""Anthropic Messages API adapter (``POST /v1/messages``) over httpx.

The neutral format is close to this API's own: text, ``tool_use`` and ``tool_result``
blocks map one to one; images become ``{"type": "image", "source": {"type": "base64",
...}}`` (also inside tool results, which the API accepts).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from .base import (
    Message,
    ModelError,
    ModelReply,
    ToolCall,
    ToolInputSink,
    post_json,
    post_sse,
)

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


class AnthropicModel:
    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 120.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.name = model
        self.base_url = (base_url or "https://api.anthropic.com").rstrip("/")
        self.max_tokens = max_tokens
        self._headers = {
            "x-api-key": api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }
        self._http = http_client
        self._timeout = timeout

    def request_body(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens,
            "messages": [
                {"role": m["role"], "content": [_block(b) for b in m["content"]]} for m in messages
            ],
        }
        if tools:
            body["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "input_schema": t["input_schema"],
                }
                for t in tools
            ]
        if system:
            body["system"] = system
        return body

    async def reply(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None = None
    ) -> ModelReply:
        body = self.request_body(messages, tools, system)
        url = f"{self.base_url}/v1/messages"
        data = await post_json(
            self._http, url, body, self._headers, self._timeout, f"Anthropic API at {self.base_url}"
        )
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

    async def stream_reply(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        system: str | None,
        on_text: Callable[[str], None],
        on_tool_input: ToolInputSink | None = None,
    ) -> ModelReply:
        """The same request with ``"stream": true``: text deltas go to ``on_text`` as they
        come; ``tool_use`` input arrives as JSON fragments, joined and parsed at the end."""
        body = {**self.request_body(messages, tools, system), "stream": True}
        url = f"{self.base_url}/v1/messages"
        blocks: dict[int, dict[str, Any]] = {}
        stop, usage = "", dict[str, Any]()
        api = f"Anthropic API at {self.base_url}"
        async for event in post_sse(self._http, url, body, self._headers, self._timeout, api):
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
                    on_text(str(delta.get("text", "")))
                elif delta.get("type") == "input_json_delta":
                    block["partial"] += str(delta.get("partial_json", ""))
                    if on_tool_input is not None and block.get("type") == "tool_use":
                        on_tool_input(
                            str(block.get("id")), str(block.get("name")), block["partial"]
                        )
            elif kind == "message_delta":
                stop = str((event.get("delta") or {}).get("stop_reason") or stop)
                usage.update(event.get("usage") or {})
            elif kind == "message_start":
                usage.update((event.get("message") or {}).get("usage") or {})
            elif kind == "error":
                raise ModelError(f"{api} streamed an error: {event.get('error')}")
        text, calls = [], []
        for _, block in sorted(blocks.items()):
            if block.get("type") == "text":
                text.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                try:
                    args = json.loads(block["partial"]) if block["partial"] else {}
                except ValueError:
                    raise ModelError(
                        f"{api}: invalid JSON input for tool {block.get('name')!r}"
                    ) from None
                calls.append(
                    ToolCall(
                        str(block.get("id")),
                        str(block.get("name")),
                        args if isinstance(args, dict) else {},
                    )
                )
        return ModelReply("".join(text), tuple(calls), stop, usage)
