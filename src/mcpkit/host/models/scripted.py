"""A model that follows a script: for tests, demos, and trying a host without an API key.

Each step is a :class:`ModelReply`, a dict ``{"text": ..., "tool_calls": [{"name",
"arguments"}]}``, ``{"echo": true}`` (answers with the text of the last user message, so a
demo or a test run from a config file can see what reached the model), or a callable
receiving the conversation so far (to answer with what a tool returned).  Every request is
kept in :attr:`ScriptedModel.requests` for assertions.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from .base import Message, ModelReply, Sinks, ToolCall

__all__ = ["ScriptedModel"]

Step = ModelReply | dict[str, Any] | Callable[[list[Message]], ModelReply]


class ScriptedModel:
    name = "scripted"

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    @classmethod
    def from_config(cls, script: list[Any]) -> ScriptedModel:
        return cls(
            [dict(step) if isinstance(step, dict) else {"text": str(step)} for step in script]
        )

    def _reply(self, step: Step, messages: list[Message]) -> ModelReply:
        if isinstance(step, ModelReply):
            return step
        if callable(step):
            return step(messages)
        if step.get("echo"):
            last = next((m for m in reversed(messages) if m["role"] == "user"), None)
            said = [b["text"] for b in (last or {}).get("content", []) if b.get("type") == "text"]
            return ModelReply(text="You said: " + "\n".join(said), stop_reason="end_turn")
        calls = tuple(
            ToolCall(
                str(c.get("id") or f"call_{next(self._ids)}"),
                str(c["name"]),
                dict(c.get("arguments") or {}),
            )
            for c in step.get("tool_calls") or []
        )
        return ModelReply(
            text=str(step.get("text") or ""),
            tool_calls=calls,
            stop_reason="tool_use" if calls else "end_turn",
        )

    async def reply(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None = None
    ) -> ModelReply:
        self.requests.append(
            {
                "messages": [dict(m) for m in messages],
                "tools": [t["name"] for t in tools],
                "system": system,
            }
        )
        if not self.steps:
            return ModelReply(text="(the script has ended)", stop_reason="end_turn")
        return self._reply(self.steps.pop(0), messages)

    async def stream_reply(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None, to: Sinks
    ) -> ModelReply:
        """:meth:`reply`, with its text handed out word by word and each tool call's
        arguments in two halves of their JSON (how a demo streams)."""
        reply = await self.reply(messages, tools, system)
        if reply.text:
            for i, word in enumerate(reply.text.split(" ")):
                to.on_text(word if i == 0 else " " + word)
        if to.on_tool_input is not None:
            for call in reply.tool_calls:
                encoded = json.dumps(call.arguments)
                to.on_tool_input(call.id, call.name, encoded[: len(encoded) // 2])
                to.on_tool_input(call.id, call.name, encoded)
        return reply
