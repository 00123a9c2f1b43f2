"""Anthropic Messages API adapter (``POST /v1/messages``) over httpx.

The neutral format is close to this API's own: text, ``tool_use`` and ``tool_result``
blocks map one to one; images become ``{"type": "image", "source": {"type": "base64",
...}}`` (also inside tool results, which the API accepts).
"""

from __future__ import annotations

from typing import Any

import httpx

from .base import Message, ModelReply, ToolCall, post_json

__all__ = ["AnthropicModel"]

API_VERSION = "2023-06-01"


def _block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "image":
        return {"type": "image", "source": {"type": "base64", "media_type": block["mimeType"],
                                            "data": block["data"]}}
    if kind == "tool_result":
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block["tool_use_id"],
                               "content": [_block(b) for b in block.get("content", [])]}
        if block.get("is_error"):
            out["is_error"] = True
        return out
    return dict(block)


class AnthropicModel:
    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 max_tokens: int = 1024, timeout: float = 120.0,
                 http_client: httpx.AsyncClient | None = None) -> None:
        self.name = model
        self.base_url = (base_url or "https://api.anthropic.com").rstrip("/")
        self.max_tokens = max_tokens
        self._headers = {"x-api-key": api_key, "anthropic-version": API_VERSION,
                         "content-type": "application/json"}
        self._http = http_client
        self._timeout = timeout

    def request_body(self, messages: list[Message], tools: list[dict[str, Any]],
                     system: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.name, "max_tokens": self.max_tokens,
            "messages": [{"role": m["role"], "content": [_block(b) for b in m["content"]]}
                         for m in messages],
        }
        if tools:
            body["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                              "input_schema": t["input_schema"]} for t in tools]
        if system:
            body["system"] = system
        return body

    async def reply(self, messages: list[Message], tools: list[dict[str, Any]],
                    system: str | None = None) -> ModelReply:
        body = self.request_body(messages, tools, system)
        url = f"{self.base_url}/v1/messages"
        data = await post_json(self._http, url, body, self._headers, self._timeout,
                               f"Anthropic API at {self.base_url}")
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in data.get("content") or []:
            if block.get("type") == "text":
                text.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                calls.append(ToolCall(str(block["id"]), str(block["name"]),
                                      dict(block.get("input") or {})))
        return ModelReply("".join(text), tuple(calls), str(data.get("stop_reason") or ""),
                          dict(data.get("usage") or {}))
