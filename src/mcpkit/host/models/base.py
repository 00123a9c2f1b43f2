"""The model interface the loop talks to, and the neutral message format it uses.

Messages are kept in one provider-neutral shape (close to Anthropic's, which has explicit
tool blocks) and each adapter translates at its edge::

    {"role": "user", "content": [{"type": "text", "text": "..."},
                                 {"type": "image", "mimeType": "image/png", "data": "<b64>"}]}
    {"role": "assistant", "content": [{"type": "text", "text": "..."},
                                      {"type": "tool_use", "id": "t1", "name": "a__add",
                                       "input": {...}}]}
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": [<text/image blocks>], "is_error": False}]}

Tools are ``{"name", "description", "input_schema"}``.  An adapter is anything with an
async ``reply(messages, tools, system)``; API keys come from the environment only.  One that
can also stream (:class:`StreamingModel`) has ``stream_reply(..., on_text)``, which calls
``on_text`` with each piece of text as it arrives (and ``on_tool_input`` with a tool call's
arguments as they grow) and returns the same :class:`ModelReply`; the loop prefers it, so a
person sees the answer being written.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    import httpx

    from ..config import ModelConfig

__all__ = [
    "HttpModel",
    "Model",
    "ModelError",
    "ModelReply",
    "Sinks",
    "StreamingModel",
    "ToolCall",
    "api_key",
    "model_from_config",
]

Message = dict[str, Any]


class ModelError(Exception):
    """The model API failed or answered something unusable; the message says which."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ModelReply:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)

    def blocks(self) -> list[dict[str, Any]]:
        """The reply as a neutral assistant message's content."""
        out: list[dict[str, Any]] = []
        if self.text:
            out.append({"type": "text", "text": self.text})
        out.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in self.tool_calls
        )
        return out


class Model(Protocol):
    name: str

    async def reply(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None = None
    ) -> ModelReply: ...


#: Gets ``(call id, tool name, the call's JSON arguments so far)`` as they stream.
ToolInputSink = Callable[[str, str, str], None]


@dataclass(frozen=True)
class Sinks:
    """Where a streamed reply goes as it arrives: its text, and its tool calls' arguments."""

    on_text: Callable[[str], None]
    on_tool_input: ToolInputSink | None = None


@runtime_checkable
class StreamingModel(Protocol):
    name: str

    async def stream_reply(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None, to: Sinks
    ) -> ModelReply:
        """:meth:`Model.reply`, handing its text and tool-call arguments to ``to`` as they
        arrive."""
        ...


def api_key(variable: str) -> str:
    key = os.environ.get(variable, "")
    if not key:
        raise ModelError(f"set the {variable} environment variable to use this model")
    return key


def model_from_config(config: ModelConfig) -> Model:
    """Build the configured adapter (imports only the one it needs)."""
    adapter: type[HttpModel]
    if config.provider == "anthropic":
        from .anthropic import AnthropicModel as adapter
    elif config.provider == "openai":
        from .openai import OpenAIModel as adapter
    else:
        from .scripted import ScriptedModel

        return ScriptedModel.from_config(list(config.script))
    return adapter.from_config(config)


def tool_call(call_id: str, name: str, arguments: str, api: str) -> ToolCall:
    """A tool call whose arguments came as a JSON string (whole or joined from a stream);
    invalid JSON is the model's fault, said as such; anything but an object is no
    arguments."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        raise ModelError(f"{api}: the model sent invalid JSON arguments for {name!r}") from None
    return ToolCall(call_id, name, parsed if isinstance(parsed, dict) else {})


class HttpModel:
    """What the HTTP adapters share: how they are built (a model name, an API key, a base
    URL), and one request and one streamed request to their endpoint.  Each adapter says
    its defaults, its headers, its request body and how it reads an answer
    (:meth:`read_reply`) and a stream (:meth:`read_stream`)."""

    default_base_url: ClassVar[str]
    default_model: ClassVar[str]
    api_key_env: ClassVar[str]
    endpoint: ClassVar[str]  # appended to the base URL
    label: ClassVar[str]  # names the API in errors
    stream_options: ClassVar[dict[str, Any]] = {}  # sent with "stream": true

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
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.max_tokens = max_tokens
        self._headers = self.headers(api_key)
        self._http = http_client
        self._timeout = timeout

    @classmethod
    def from_config(cls, config: ModelConfig) -> Self:
        """The adapter a host config names (its API key from the environment)."""
        return cls(
            config.model or cls.default_model,
            api_key=api_key(config.api_key_env or cls.api_key_env),
            base_url=config.base_url,
            max_tokens=config.max_tokens,
        )

    @property
    def api(self) -> str:
        return f"{self.label} at {self.base_url}"

    def headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def request_body(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.name, "max_tokens": self.max_tokens}
        body.update(self.conversation(messages, system))
        if tools:
            body["tools"] = [self.tool_spec(tool) for tool in tools]
        return body

    def conversation(self, messages: list[Message], system: str | None) -> dict[str, Any]:
        """The body's fields that carry the messages and the system prompt."""
        raise NotImplementedError

    def tool_spec(self, tool: dict[str, Any]) -> dict[str, Any]:
        """A neutral tool (``name``, ``description``, ``input_schema``) as the API wants it."""
        raise NotImplementedError

    def read_reply(self, data: Any) -> ModelReply:
        raise NotImplementedError

    async def read_stream(self, events: AsyncIterator[dict[str, Any]], to: Sinks) -> ModelReply:
        raise NotImplementedError

    async def reply(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None = None
    ) -> ModelReply:
        body = self.request_body(messages, tools, system)
        url = self.base_url + self.endpoint
        data = await post_json(self._http, url, body, self._headers, self._timeout, self.api)
        return self.read_reply(data)

    async def stream_reply(
        self, messages: list[Message], tools: list[dict[str, Any]], system: str | None, to: Sinks
    ) -> ModelReply:
        """The same request with ``"stream": true``, its events read by the adapter."""
        body = {**self.request_body(messages, tools, system), "stream": True}
        body.update(self.stream_options)
        url = self.base_url + self.endpoint
        events = post_sse(self._http, url, body, self._headers, self._timeout, self.api)
        return await self.read_stream(events, to)


async def post_json(
    http: Any, url: str, body: dict[str, Any], headers: dict[str, str], timeout: float, api: str
) -> Any:
    """POST a model API request and return its JSON, or raise :class:`ModelError` saying
    which API failed and how (one place for every HTTP adapter).  ``http`` is a shared
    ``httpx.AsyncClient`` or None for a one-off one."""
    import httpx

    try:
        if http is not None:
            response = await http.post(url, json=body, headers=headers)
        else:
            async with httpx.AsyncClient(timeout=timeout) as client:
                response = await client.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise ModelError(f"{api}: {exc}") from None
    if response.status_code != 200:
        raise ModelError(f"{api} answered HTTP {response.status_code}: {response.text[:300]}")
    return response.json()


async def post_sse(
    http: Any, url: str, body: dict[str, Any], headers: dict[str, str], timeout: float, api: str
) -> AsyncIterator[dict[str, Any]]:
    """POST a streaming model API request and yield each server-sent event's JSON data
    (``[DONE]`` ends it), parsed by httpx-sse; failures become :class:`ModelError`."""
    import httpx
    from httpx_sse import EventSource, SSEError

    owned = http is None
    client = httpx.AsyncClient(timeout=timeout) if owned else http
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode("utf-8", "replace")
                raise ModelError(f"{api} answered HTTP {response.status_code}: {text[:300]}")
            async for event in EventSource(response).aiter_sse():
                if event.data == "[DONE]":
                    return
                if not event.data:
                    continue
                try:
                    data = json.loads(event.data)
                except ValueError:
                    raise ModelError(f"{api} streamed invalid JSON: {event.data[:200]}") from None
                if isinstance(data, dict):
                    yield data
    except (httpx.HTTPError, SSEError) as exc:
        raise ModelError(f"{api}: {exc}") from None
    finally:
        if owned:
            await client.aclose()
