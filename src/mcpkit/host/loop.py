"""The model loop: the person says something, the model may call tools, the host runs them
through the policy, results go back to the model, until it answers in words.

Only what the person typed or chose to attach (a resource, a prompt) and the tool results
go into the conversation.  Servers see only the arguments of their own tools' calls: the
conversation is never sent to a server, and sampling requests from servers are answered
from the messages the server itself supplied (:func:`sampler_for`).

A refused call (``deny`` or a person's "no") does not end the turn: the model gets an error
result saying it was refused, so it can explain or try something else.

Context hygiene (the model's context is the scarce thing):

* tools the policy denies are not offered at all (:meth:`Host.model_tools`);
* one tool result is capped at ``max_tool_output_tokens`` (config ``maxToolOutputTokens``,
  default 25,000), measured by :func:`estimate_tokens`, a tokenizer-free estimate (a
  tokenizer per provider would be a dependency and still be wrong for the others); the
  model is told what was cut, so it can ask for less;
* each server's ``instructions`` join the system prompt, marked as the server's words
  and bounded in length;
* with ``toolSearch`` a large catalog is deferred: the model searches and loads what it
  needs (:mod:`.search`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from .host import Host, ToolCancelled, ToolDenied
from .models.base import Message, Model, ModelReply, Sinks, StreamingModel
from .search import SEARCH_TOOL, search_tools
from .skills import LOAD_SKILL, HostSkill, list_skills, load_skill, skill_tool

__all__ = [
    "Conversation",
    "cap_blocks",
    "estimate_tokens",
    "recover_json",
    "result_blocks",
    "sampler_for",
]

EventSink = Callable[[str, dict[str, Any]], None]
#: Longest instructions text taken from one server (characters).
MAX_INSTRUCTIONS = 4000


def estimate_tokens(text: str) -> int:
    """Tokens a model will likely spend on ``text``, without a tokenizer: about four ASCII
    characters per token, and one token for every other character (CJK, emoji and
    accented text tokenize far worse than English), so the estimate errs high."""
    ascii_chars = sum(1 for ch in text if ch < "\x80")
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def _closers(text: str) -> tuple[str, list[int]] | None:
    """What closes ``text``'s open strings and brackets, and the offsets of its top-level
    commas (places to cut back to); None if the brackets do not match."""
    stack: list[str] = []
    commas: list[int] = []
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
        elif ch == "," and len(stack) == 1:
            commas.append(i)
    return ('"' if in_string else "") + "".join(reversed(stack)), commas


def recover_json(partial: str) -> dict[str, Any] | None:
    """Best-effort arguments from streamed, incomplete JSON (the MCP Apps spec's
    ``tool-input-partial``): close what is open; if that is not valid (a key without its
    value), drop the last incomplete member and try again."""
    found = _closers(partial)
    start = partial.find("{")
    if found is None or start < 0:
        return None
    for cut in [len(partial), *reversed(found[1]), start + 1]:  # an empty object last
        text = partial[:cut]
        ends = _closers(text)
        if ends is None:
            continue
        try:
            value = json.loads(text + ends[0])
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def _cut(text: str, budget: int) -> str:
    """The longest prefix of ``text`` within ``budget`` estimated tokens."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def cap_blocks(blocks: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    """Text blocks cut to ``max_tokens`` estimated tokens in all, with a note saying so.
    Images pass (models price them by size in pixels, not by their base64 length)."""
    total = sum(estimate_tokens(b["text"]) for b in blocks if b.get("type") == "text")
    if total <= max_tokens:
        return blocks
    budget, out = max_tokens, []
    for block in blocks:
        if block.get("type") != "text":
            out.append(block)
            continue
        kept = _cut(block["text"], budget)
        budget -= estimate_tokens(kept)
        if kept:
            out.append({"type": "text", "text": kept})
    out.append(
        {
            "type": "text",
            "text": (
                f"[the tool output was truncated: about {total:,} tokens, over this host's "
                f"cap of {max_tokens:,} (maxToolOutputTokens); ask the tool for less, e.g. a "
                f"smaller range or a filter, if you need the rest]"
            ),
        }
    )
    return out


def _resource_text(resource: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(resource.get("text"), str):
        return {"type": "text", "text": f"[{resource.get('uri')}]\n{resource['text']}"}
    mime = str(resource.get("mimeType") or "")
    if mime.startswith("image/") and isinstance(resource.get("blob"), str):
        return {"type": "image", "mimeType": mime, "data": resource["blob"]}
    return {"type": "text", "text": f"[{resource.get('uri')}: binary {mime or 'data'}]"}


def result_blocks(result: Mapping[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """A ``CallToolResult`` as neutral content blocks, and whether it is an error."""
    blocks: list[dict[str, Any]] = []
    for item in result.get("content") or []:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "text":
            blocks.append({"type": "text", "text": str(item.get("text", ""))})
        elif kind == "image" and isinstance(item.get("data"), str):
            blocks.append(
                {
                    "type": "image",
                    "mimeType": str(item.get("mimeType") or "image/png"),
                    "data": item["data"],
                }
            )
        elif kind == "resource" and isinstance(item.get("resource"), Mapping):
            blocks.append(_resource_text(item["resource"]))
        elif kind == "resource_link":
            blocks.append({"type": "text", "text": f"[resource link: {item.get('uri')}]"})
        elif kind is not None:
            blocks.append({"type": "text", "text": f"[{kind} content omitted]"})
    if "structuredContent" in result:
        encoded = json.dumps(result["structuredContent"], sort_keys=True)
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        if not any(_same_json(t, result["structuredContent"]) for t in texts):
            blocks.append({"type": "text", "text": f"structured result: {encoded}"})
    if not blocks:
        blocks.append({"type": "text", "text": "(no content)"})
    return blocks, bool(result.get("isError"))


def _same_json(text: str, value: object) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


@dataclass(eq=False)
class Conversation:
    """One chat between a person and ``model`` over ``host``'s tools (see the module's
    description): :meth:`send` runs a turn, up to ``max_steps`` model replies, and every
    step is reported to ``on_event``."""

    host: Host
    model: Model
    _: KW_ONLY
    system: str | None = None
    max_steps: int = 12
    on_event: EventSink | None = None
    #: One tool result's cap in estimated tokens (None: the host config's).
    max_tool_output_tokens: int | None = None
    #: Ask a :class:`StreamingModel` to stream its text (``assistant_delta`` events).
    stream: bool = True
    messages: list[Message] = field(default_factory=list, init=False)
    #: Tools the model loaded with the search tool (deferred loading).
    loaded: set[str] = field(default_factory=set, init=False)
    #: The servers' skills offered with the last step (:mod:`.skills`).
    skills: list[HostSkill] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.max_tool_output_tokens is None:
            self.max_tool_output_tokens = self.host.config.max_tool_output_tokens
        self._output_cap: int = self.max_tool_output_tokens
        self._pending: list[dict[str, Any]] = []
        #: ``ui/update-model-context`` per app view, waiting for the next turn (the spec:
        #: each update overwrites the view's previous one; only the last is sent).
        self._app_context: dict[str, dict[str, Any]] = {}
        #: Calls of this step the host refused (policy or person), by the model's call id.
        self._refused: set[str] = set()
        self._emit = self.on_event or (lambda kind, data: None)

    @property
    def has_pending(self) -> bool:
        """Something (an attachment, a prompt) is waiting to be sent to the model."""
        return bool(self._pending) or (bool(self.messages) and self.messages[-1]["role"] == "user")

    async def attach_resource(self, server: str, uri: str) -> None:
        """Put a resource's contents into the next message (the person chose it)."""
        read = await self.host.read_resource(server, uri)
        self._pending.extend(_resource_text(c) for c in read.get("contents", []))

    async def use_prompt(
        self, server: str, name: str, arguments: Mapping[str, str] | None = None
    ) -> list[Message]:
        """Add a server prompt's messages to the conversation (the person picked it)."""
        got = await self.host.get_prompt(server, name, arguments)
        added: list[Message] = []
        if self._pending:  # attachments chosen earlier stay before the prompt
            added.append({"role": "user", "content": self._pending})
            self._pending = []
        for message in got.get("messages", []):
            block, _ = result_blocks({"content": [message["content"]]})
            added.append({"role": message["role"], "content": block})
        self._append_all(added)
        return added

    async def _offered(self) -> list[dict[str, Any]]:
        """The tool definitions for this step: all of them, or (deferred loading) the
        search tool and the tools loaded so far; and ``load_skill`` when servers publish
        skills."""
        self.skills = await list_skills(self.host)
        extra = [skill_tool(self.skills)] if self.skills else []
        tools = await self.host.model_tools()
        threshold = self.host.config.tool_search
        if threshold is None or len(tools) <= threshold:
            return [*(t.for_api() for t in tools), *extra]
        loaded = (t.for_api() for t in tools if t.qualified_name in self.loaded)
        return [SEARCH_TOOL, *loaded, *extra]

    async def _load_skill(self, call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run the host's own ``load_skill``: the chosen skill's body, read now."""
        self._emit("tool_call", {"id": call_id, "name": LOAD_SKILL, "arguments": arguments})
        try:
            text = await load_skill(self.host, self.skills, str(arguments.get("skill", "")))
            is_error = False
        except Exception as exc:
            text, is_error = f"The skill could not be loaded: {exc}", True
        blocks = cap_blocks([{"type": "text", "text": text}], self._output_cap)
        self._emit(
            "tool_result",
            {"id": call_id, "name": LOAD_SKILL, "is_error": is_error, "content": blocks},
        )
        return {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": blocks,
            "is_error": is_error,
        }

    async def _search(self, call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run the host's own search tool: load what it finds, say what it loaded."""
        self._emit(
            "tool_call", {"id": call_id, "name": SEARCH_TOOL["name"], "arguments": arguments}
        )
        limit = arguments.get("limit")
        found = search_tools(
            await self.host.model_tools(),
            str(arguments.get("query", "")),
            limit if isinstance(limit, int) else 5,
        )
        self.loaded.update(t.qualified_name for t in found)
        text = (
            "Loaded these tools; call them on your next step:\n"
            + "\n".join(f"- {t.qualified_name}: {t.description[:200]}" for t in found)
            if found
            else "No tool matches; try other words."
        )
        blocks = [{"type": "text", "text": text}]
        self._emit(
            "tool_result",
            {"id": call_id, "name": SEARCH_TOOL["name"], "is_error": False, "content": blocks},
        )
        return {"type": "tool_result", "tool_use_id": call_id, "content": blocks, "is_error": False}

    def _partial_input(self, call_id: str, name: str, partial: str) -> None:
        """Arguments still streaming for a tool that has a view: the page may show the
        view already and send it ``ui/notifications/tool-input-partial``."""
        tool = self.host.tool(name)
        if tool is None or not tool.ui_resource_uri:
            return
        arguments = recover_json(partial)
        if arguments is not None:
            self._emit(
                "tool_input_partial",
                {
                    "id": call_id,
                    "name": name,
                    "arguments": arguments,
                    "app": {"server": tool.server, "tool": tool.name, "uri": tool.ui_resource_uri},
                },
            )

    async def _ask_model(self, tools: list[dict[str, Any]]) -> ModelReply:
        """One model step; streamed as ``assistant_delta`` events when the model can."""
        if self.stream and isinstance(self.model, StreamingModel):
            to = Sinks(
                lambda text: self._emit("assistant_delta", {"text": text}), self._partial_input
            )
            return await self.model.stream_reply(self.messages, tools, self.system_prompt(), to)
        return await self.model.reply(self.messages, tools, self.system_prompt())

    def system_prompt(self) -> str | None:
        """The configured system prompt, then each ready server's ``instructions``."""
        parts = [self.system] if self.system else []
        found = self.host.instructions()
        if found:
            parts.append(
                "Instructions from the MCP servers connected to this host (each "
                "written by that server, not by the user):"
            )
        for server, text in found:
            if len(text) > MAX_INSTRUCTIONS:
                text = text[:MAX_INSTRUCTIONS] + " [cut: too long]"
            text = text.replace("</server", "<\\/server")  # cannot close its own frame
            parts.append(f'<server name="{server}" tools="{server}__*">\n{text}\n</server>')
        return "\n\n".join(parts) if parts else None

    def _append_all(self, messages: list[Message]) -> None:
        for message in messages:
            last = self.messages[-1] if self.messages else None
            if last is not None and last["role"] == message["role"]:
                last["content"] = [*last["content"], *message["content"]]
            else:
                self.messages.append({"role": message["role"], "content": list(message["content"])})

    def set_app_context(self, view: str, server: str, uri: str, params: Mapping[str, Any]) -> None:
        """An app view's ``ui/update-model-context``: kept until the next turn, then sent
        once, labelled as the app's words (it is the server's content, not the person's)."""
        blocks, _ = result_blocks(
            {
                "content": params.get("content") or [],
                **(
                    {"structuredContent": params["structuredContent"]}
                    if "structuredContent" in params
                    else {}
                ),
            }
        )
        texts = "\n".join(b["text"] for b in blocks if b["type"] == "text")
        if params.get("content") or "structuredContent" in params:
            self._app_context[view] = {
                "type": "text",
                "text": (
                    f"[context from the app view {uri} of server {server!r}, written by the "
                    f"app:]\n{texts}"
                ),
            }
        else:
            self._app_context.pop(view, None)  # an empty update clears it

    async def app_message(self, server: str, role: str, text: str) -> str | None:
        """An app view's ``ui/message`` (after the host allowed it): a ``user`` message
        starts a turn like one the person typed; an ``assistant`` one is recorded."""
        self._emit("app_message", {"server": server, "role": role, "text": text})
        if role == "user":
            return await self.send(text)
        self._append_all([{"role": "assistant", "content": [{"type": "text", "text": text}]}])
        return None

    async def send(self, text: str = "") -> str:
        """One turn: returns the model's final words."""
        context, self._app_context = list(self._app_context.values()), {}
        content = [*context, *self._pending, *([{"type": "text", "text": text}] if text else [])]
        self._pending = []
        if content:
            self._append_all([{"role": "user", "content": content}])
        for _ in range(self.max_steps):
            tools = await self._offered()
            reply = await self._ask_model(tools)
            self.messages.append({"role": "assistant", "content": reply.blocks()})
            if reply.text:
                self._emit("assistant", {"text": reply.text, "final": not reply.tool_calls})
            if not reply.tool_calls:
                return reply.text
            results = []
            for call in reply.tool_calls:
                if call.name == SEARCH_TOOL["name"]:
                    results.append(await self._search(call.id, call.arguments))
                    continue
                if call.name == LOAD_SKILL and self.skills:
                    results.append(await self._load_skill(call.id, call.arguments))
                    continue
                tool = self.host.tool(call.name)
                app = (
                    {"server": tool.server, "tool": tool.name, "uri": tool.ui_resource_uri}
                    if tool is not None and tool.ui_resource_uri
                    else None
                )
                # A tool with a view: the page shows the view from the start of the call
                # (tool input first), then its result, or tool-cancelled with the reason.
                self._emit(
                    "tool_call",
                    {
                        "id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                        **({"app": app} if app else {}),
                    },
                )
                started = time.monotonic()
                blocks, is_error, raw = await self._run(call.name, call.arguments, call.id)
                event = {
                    "id": call.id,
                    "name": call.name,
                    "is_error": is_error,
                    "content": blocks,
                    "durationMs": round((time.monotonic() - started) * 1000),
                }
                if raw is not None and raw.get("structuredContent") is not None:
                    event["structured"] = raw["structuredContent"]
                if call.id in self._refused:
                    self._refused.discard(call.id)
                    event["refused"] = True
                if app is not None:
                    event["app"] = {**app, "arguments": call.arguments, "result": raw}
                self._emit("tool_result", event)
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": call.id,
                        "content": blocks,
                        "is_error": is_error,
                    }
                )
            self.messages.append({"role": "user", "content": results})
        note = f"(stopped after {self.max_steps} model steps without a final answer)"
        self._emit("assistant", {"text": note, "final": True})
        return note

    async def _run(
        self, name: str, arguments: dict[str, Any], call_id: str
    ) -> tuple[list[dict[str, Any]], bool, dict[str, Any] | None]:
        """(blocks for the model, is_error, the raw result when the call ran).  The host
        call id is ``chat:<the model's call id>`` (what the page cancels)."""
        try:
            result = await self.host.call_tool(
                name, arguments, origin="model", call_id=f"chat:{call_id}"
            )
        except ToolCancelled:
            return (
                [{"type": "text", "text": "The user cancelled this tool call while it ran."}],
                True,
                None,
            )
        except ToolDenied as exc:
            self._refused.add(call_id)
            return (
                [{"type": "text", "text": f"The tool call was refused: {exc.reason}."}],
                True,
                None,
            )
        except Exception as exc:
            return [{"type": "text", "text": f"The tool call failed: {exc}"}], True, None
        blocks, is_error = result_blocks(result)
        return cap_blocks(blocks, self._output_cap), is_error, dict(result)


def sampler_for(model: Model) -> Callable[[dict[str, Any]], Any]:
    """A host ``sampler``: answers ``sampling/createMessage`` with ``model``, using only the
    messages, system prompt and tools the server sent (never the host's conversation).

    With tools (sampling with tools), the model sees them unless ``toolChoice`` is
    ``none``; its tool calls come back as ``tool_use`` blocks with ``stopReason: "toolUse"``
    and are not run here: the server runs them and sends their ``tool_result`` next round.
    """

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        messages = [_sampling_message(m) for m in params.get("messages") or []]
        system = params.get("systemPrompt")
        tools = _sampling_tools(params)
        reply = await model.reply(messages, tools, system if isinstance(system, str) else None)
        if reply.tool_calls:
            return {
                "role": "assistant",
                "content": reply.blocks(),
                "model": model.name,
                "stopReason": "toolUse",
            }
        return {
            "role": "assistant",
            "content": {"type": "text", "text": reply.text},
            "model": model.name,
            "stopReason": "endTurn",
        }

    return sample


def _sampling_tools(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A sampling request's tools in the model's shape; none when ``toolChoice`` says so."""
    choice = params.get("toolChoice")
    if isinstance(choice, Mapping) and choice.get("mode") == "none":
        return []
    return [
        {
            "name": str(tool["name"]),
            "description": str(tool.get("description") or ""),
            "input_schema": dict(tool.get("inputSchema") or {"type": "object"}),
        }
        for tool in params.get("tools") or []
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str)
    ]


def _sampling_message(message: Mapping[str, Any]) -> Message:
    """One ``SamplingMessage`` in the neutral shape: its text and images, its ``tool_use``
    blocks, and its ``tool_result`` blocks (by ``toolUseId``)."""
    raw = message.get("content")
    items = [i for i in (raw if isinstance(raw, list) else [raw]) if isinstance(i, Mapping)]
    blocks: list[dict[str, Any]] = []
    for item in items:
        if item.get("type") == "tool_use":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": str(item.get("id")),
                    "name": str(item.get("name")),
                    "input": dict(item.get("input") or {}),
                }
            )
        elif item.get("type") == "tool_result":
            content, _ = result_blocks({"content": item.get("content") or []})
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": str(item.get("toolUseId")),
                    "content": content,
                    "is_error": bool(item.get("isError")),
                }
            )
        else:
            blocks.extend(result_blocks({"content": [item]})[0])
    return {"role": str(message.get("role", "user")), "content": blocks}
