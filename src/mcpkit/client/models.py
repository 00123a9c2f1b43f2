"""Shapes of what the client returns and what callbacks receive, as ``TypedDict``.

Results stay the plain dicts that came off the wire (no copy, no model construction on the
hot path, unknown fields kept); these types only tell the type checker and the reader what
to expect.  The client checks the few fields it relies on (a list is a list, a name is a
string) and reports a bad result as :class:`~mcpkit.client.errors.InvalidResultError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Required, TypedDict

JsonObject = dict[str, Any]
ContentBlock = dict[str, Any]
ElicitAction = Literal["accept", "decline", "cancel"]


class Implementation(TypedDict, total=False):
    """Who a client or server is (``clientInfo`` / ``serverInfo``): name, version, and
    optionally a title, description and website."""

    name: Required[str]
    version: Required[str]
    title: str
    description: str
    websiteUrl: str


class Tool(TypedDict, total=False):
    """A tool as ``tools/list`` describes it: its name, JSON schemas for input and (when it
    returns structured content) output, and annotations, which are hints never to be trusted."""

    name: Required[str]
    title: str
    description: str
    inputSchema: JsonObject
    outputSchema: JsonObject
    annotations: JsonObject
    icons: list[JsonObject]
    #: 2025-11-25: ``{"taskSupport": "forbidden" | "optional" | "required"}``.
    execution: JsonObject
    _meta: JsonObject


class PromptArgument(TypedDict, total=False):
    name: Required[str]
    title: str
    description: str
    required: bool


class Prompt(TypedDict, total=False):
    """A prompt as ``prompts/list`` describes it, with the arguments ``get_prompt`` takes."""

    name: Required[str]
    title: str
    description: str
    arguments: list[PromptArgument]
    _meta: JsonObject


class Resource(TypedDict, total=False):
    """A resource as ``resources/list`` describes it; ``read_resource(uri)`` fetches it."""

    uri: Required[str]
    name: str
    title: str
    description: str
    mimeType: str
    size: int
    _meta: JsonObject


class ResourceTemplate(TypedDict, total=False):
    """An RFC 6570 URI template (``resources/templates/list``): any URI it matches can be read."""

    uriTemplate: Required[str]
    name: str
    title: str
    description: str
    mimeType: str
    _meta: JsonObject


class ResourceContents(TypedDict, total=False):
    uri: Required[str]
    mimeType: str
    text: str
    blob: str
    _meta: JsonObject


class CallToolResult(dict[str, Any]):
    """A ``tools/call`` result: the wire dict (``content``, ``structuredContent``,
    ``isError``, ``resultType``, ``_meta``), plus :attr:`data`.

    A ``dict`` (subclass) so that code written against the wire shape, and anything that
    serializes or forwards it (host, gateway), keeps working unchanged.
    """

    __slots__ = ("data",)

    def __init__(self, wire: Mapping[str, Any] | None = None, data: Any = None) -> None:
        super().__init__(wire or {})
        #: ``structuredContent`` as plain JSON, or deserialized into the ``result_type``
        #: given to ``call_tool``; None when the tool returned no structured content.
        self.data = data

    @property
    def is_error(self) -> bool:
        """The tool failed (``isError``): ``content`` says why."""
        return self.get("isError") is True

    def __repr__(self) -> str:
        return f"CallToolResult({dict.__repr__(self)}, data={self.data!r})"


class PromptMessage(TypedDict):
    role: str
    content: ContentBlock


class GetPromptResult(TypedDict, total=False):
    """The answer to ``prompts/get``: the prompt's messages, ready for a model."""

    description: str
    messages: list[PromptMessage]
    resultType: str
    _meta: JsonObject


class ReadResourceResult(TypedDict, total=False):
    """The answer to ``resources/read``: one or more contents (text or base64 ``blob``), with
    the ``ttlMs``/``cacheScope`` the client's cache honours."""

    contents: list[ResourceContents]
    ttlMs: int
    cacheScope: str
    resultType: str
    _meta: JsonObject


class Completion(TypedDict, total=False):
    values: Required[list[str]]
    total: int
    hasMore: bool


class CompleteResult(TypedDict, total=False):
    """The answer to ``completion/complete``: suggested values for one argument."""

    completion: Required[Completion]
    _meta: JsonObject


class DiscoverResult(TypedDict, total=False):
    """The answer to ``server/discover`` (2026-07-28): the versions and capabilities the
    server supports, which a modern client learns without a session."""

    supportedVersions: list[str]
    capabilities: JsonObject
    instructions: str
    ttlMs: int
    cacheScope: str
    _meta: JsonObject


class ElicitResult(TypedDict, total=False):
    """What an elicitation callback returns: ``accept`` (with ``content`` matching the
    requested schema), ``decline`` or ``cancel``."""

    action: Required[ElicitAction]
    content: JsonObject


class CreateMessageResult(TypedDict, total=False):
    """What a sampling callback returns: the model's message, the model's name and why it
    stopped."""

    role: Required[str]
    content: Required[Any]
    model: Required[str]
    stopReason: str


class Root(TypedDict, total=False):
    """A root the client exposes to servers (``roots/list``): a ``file://`` URI and a name."""

    uri: Required[str]
    name: str


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Who the server is and what it offers, learnt from ``server/discover`` (modern) or the
    ``initialize`` result (legacy)."""

    era: Literal["modern", "legacy"]
    protocol_version: str
    capabilities: JsonObject = field(default_factory=dict)
    implementation: JsonObject = field(default_factory=dict)
    instructions: str | None = None
    supported_versions: tuple[str, ...] = ()

    def supports(self, capability: str) -> bool:
        """True when the dotted capability (``"tools"``, ``"resources.subscribe"``) is on."""
        node: Any = self.capabilities
        for part in capability.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return node is not None and node is not False


@dataclass(frozen=True, slots=True)
class Notification:
    """A server notification, as a listen stream (or a legacy session) delivers it."""

    method: str
    params: JsonObject

    @property
    def uri(self) -> str | None:
        """The resource URI of ``notifications/resources/updated``."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None


def prompt_ref(name: str) -> dict[str, Any]:
    """A completion reference to a prompt."""
    return {"type": "ref/prompt", "name": name}


def resource_ref(uri: str) -> dict[str, Any]:
    """A completion reference to a resource (template)."""
    return {"type": "ref/resource", "uri": uri}
