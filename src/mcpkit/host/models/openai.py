"""OpenAI-compatible chat completions adapter (``POST {base}/chat/completions``) over httpx.

Works with any server speaking that format (OpenAI, vLLM, llama.cpp, Ollama...).
Translation from the neutral format:

* ``tool_use`` blocks -> the assistant message's ``tool_calls`` (arguments as a JSON
  string); each ``tool_result`` -> a ``{"role": "tool", "tool_call_id", "content"}``
  message with the text.
* Tool messages carry text only in this API, so images a tool returned follow the tool
  messages as one user message of ``image_url`` parts (``data:`` URLs), introduced by
  text saying which call produced them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from .base import HttpModel, Message, ModelError, ModelReply, Sinks, tool_call

__all__ = ["OpenAIModel"]


def _image_part(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block['mimeType']};base64,{block['data']}"},
    }


def _user_content(blocks: list[dict[str, Any]]) -> Any:
    if all(b.get("type") == "text" for b in blocks):
        return "\n".join(str(b["text"]) for b in blocks)
    return [
        {"type": "text", "text": b["text"]} if b.get("type") == "text" else _image_part(b)
        for b in blocks
        if b.get("type") in ("text", "image")
    ]


def convert(messages: list[Message], system: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        blocks = message["content"]
        if message["role"] == "assistant":
            text = "".join(b["text"] for b in blocks if b.get("type") == "text")
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        results = [b for b in blocks if b.get("type") == "tool_result"]
        images: list[dict[str, Any]] = []
        for result in results:
            parts = result.get("content", [])
            text = "\n".join(str(p["text"]) for p in parts if p.get("type") == "text")
            found = [p for p in parts if p.get("type") == "image"]
            if found:
                text += f"\n[{len(found)} image(s) follow in the next message]"
                images.append(
                    {
                        "type": "text",
                        "text": f"Image(s) returned by tool call {result['tool_use_id']}:",
                    }
                )
                images.extend(_image_part(p) for p in found)
            if result.get("is_error"):
                text = f"Error: {text}"
            out.append({"role": "tool", "tool_call_id": result["tool_use_id"], "content": text})
        if images:
            out.append({"role": "user", "content": images})
        rest = [b for b in blocks if b.get("type") != "tool_result"]
        if rest:
            out.append({"role": "user", "content": _user_content(rest)})
    return out


class OpenAIModel(HttpModel):
    default_base_url = "https://api.openai.com/v1"
    default_model = "gpt-4o-mini"
    api_key_env = "OPENAI_API_KEY"
    endpoint = "/chat/completions"
    label = "chat completions"
    stream_options = {"stream_options": {"include_usage": True}}

    def headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def conversation(self, messages: list[Message], system: str | None) -> dict[str, Any]:
        return {"messages": convert(messages, system)}

    def tool_spec(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool["input_schema"],
            },
        }

    def read_reply(self, data: Any) -> ModelReply:
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"{self.label}: no choices in {str(data)[:200]}") from None
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name, arguments = str(function.get("name")), function.get("arguments") or ""
            calls.append(tool_call(str(call.get("id")), name, arguments, self.api))
        return ModelReply(
            str(message.get("content") or ""),
            tuple(calls),
            str(choice.get("finish_reason") or ""),
            dict(data.get("usage") or {}),
        )

    async def read_stream(self, events: AsyncIterator[dict[str, Any]], to: Sinks) -> ModelReply:
        """``delta.content`` goes to ``on_text``; ``delta.tool_calls`` fragments are
        joined by their ``index``."""
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish, usage = "", dict[str, Any]()
        async for chunk in events:
            if isinstance(chunk.get("error"), dict):
                raise ModelError(f"{self.api} streamed an error: {chunk['error']}")
            usage.update(chunk.get("usage") or {})
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(str(delta["content"]))
                    to.on_text(str(delta["content"]))
                for part in delta.get("tool_calls") or []:
                    call = calls.setdefault(
                        int(part.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                    )
                    function = part.get("function") or {}
                    call["id"] = str(part.get("id") or call["id"])
                    call["name"] += str(function.get("name") or "")
                    call["arguments"] += str(function.get("arguments") or "")
                    if to.on_tool_input is not None and call["id"] and call["name"]:
                        to.on_tool_input(call["id"], call["name"], call["arguments"])
                finish = str(choice.get("finish_reason") or finish)
        out = [
            tool_call(call["id"], call["name"], call["arguments"], self.api)
            for _, call in sorted(calls.items())
        ]
        return ModelReply("".join(text), tuple(out), finish, usage)
