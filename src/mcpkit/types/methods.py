"""The method table: every MCP method of both revisions and what governs it.

One row per method: its direction, which eras have it, the server capability that gates
it, which param becomes the ``Mcp-Name`` header, whether it may answer with an
``InputRequiredResult`` (MRTR) and whether its complete result is cacheable (carries
``ttlMs``/``cacheScope``).  Dispatch (``Server``, both HTTP eras, stdio), header
validation, rate-limit keys, the gateway and the proxy's forwarding read this table instead
of keeping lists of their own; ``params_type``/``result_type`` name the schema definitions
(``tests/protocol/test_method_table.py`` holds them to the official schemas).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Direction = Literal["client_to_server", "server_to_client", "both"]

_BOTH: Final = frozenset({"modern", "legacy"})
_MODERN: Final = frozenset({"modern"})
_LEGACY: Final = frozenset({"legacy"})


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    kind: Literal["request", "notification"]
    direction: Direction
    eras: frozenset[str]
    #: Server capability that must be advertised for the method to exist (None: always).
    capability: str | None = None
    #: The params member mirrored in the ``Mcp-Name`` HTTP header (2026-07-28).
    name_param: str | None = None
    #: May answer with ``resultType: "input_required"`` (multi round-trip requests).
    mrtr: bool = False
    #: Complete results carry ``ttlMs`` and ``cacheScope``.
    cacheable: bool = False
    #: Schema definition of the params and result objects (for docs and tests).
    params_type: str | None = None
    result_type: str | None = None


def _r(
    name: str, direction: Direction = "client_to_server", eras: frozenset[str] = _BOTH, **kw: object
) -> MethodSpec:
    return MethodSpec(name, "request", direction, eras, **kw)  # type: ignore[arg-type]


def _n(
    name: str, direction: Direction = "server_to_client", eras: frozenset[str] = _BOTH, **kw: object
) -> MethodSpec:
    return MethodSpec(name, "notification", direction, eras, **kw)  # type: ignore[arg-type]


METHODS: Final[dict[str, MethodSpec]] = {
    spec.name: spec
    for spec in (
        # client -> server requests
        _r("server/discover", eras=_MODERN, cacheable=True, result_type="DiscoverResult"),
        _r(
            "initialize",
            eras=_LEGACY,
            params_type="InitializeRequestParams",
            result_type="InitializeResult",
        ),
        _r("ping", direction="both", eras=_LEGACY, result_type="EmptyResult"),
        _r(
            "tools/list",
            capability="tools",
            cacheable=True,
            params_type="PaginatedRequestParams",
            result_type="ListToolsResult",
        ),
        _r(
            "tools/call",
            capability="tools",
            name_param="name",
            mrtr=True,
            params_type="CallToolRequestParams",
            result_type="CallToolResult",
        ),
        _r(
            "prompts/list",
            capability="prompts",
            cacheable=True,
            params_type="PaginatedRequestParams",
            result_type="ListPromptsResult",
        ),
        _r(
            "prompts/get",
            capability="prompts",
            name_param="name",
            mrtr=True,
            params_type="GetPromptRequestParams",
            result_type="GetPromptResult",
        ),
        _r(
            "resources/list",
            capability="resources",
            cacheable=True,
            params_type="PaginatedRequestParams",
            result_type="ListResourcesResult",
        ),
        _r(
            "resources/templates/list",
            capability="resources",
            cacheable=True,
            params_type="PaginatedRequestParams",
            result_type="ListResourceTemplatesResult",
        ),
        _r(
            "resources/read",
            capability="resources",
            name_param="uri",
            mrtr=True,
            cacheable=True,
            params_type="ReadResourceRequestParams",
            result_type="ReadResourceResult",
        ),
        _r(
            "resources/subscribe",
            eras=_LEGACY,
            capability="resources.subscribe",
            result_type="EmptyResult",
        ),
        _r(
            "resources/unsubscribe",
            eras=_LEGACY,
            capability="resources.subscribe",
            result_type="EmptyResult",
        ),
        _r(
            "completion/complete",
            capability="completions",
            params_type="CompleteRequestParams",
            result_type="CompleteResult",
        ),
        _r("logging/setLevel", eras=_LEGACY, capability="logging", result_type="EmptyResult"),
        _r(
            "subscriptions/listen",
            eras=_MODERN,
            params_type="SubscriptionsListenRequestParams",
            result_type="SubscriptionsListenResult",
        ),
        # tasks extension (modern) / core tasks (legacy)
        _r("tasks/get", direction="both", name_param="taskId"),
        _r("tasks/update", eras=_MODERN, name_param="taskId"),
        _r("tasks/cancel", direction="both", name_param="taskId"),
        _r(
            "tasks/result",
            direction="both",
            eras=_LEGACY,
            result_type="GetTaskPayloadResult",
        ),
        _r(
            "tasks/list",
            direction="both",
            eras=_LEGACY,
            params_type="PaginatedRequestParams",
            result_type="ListTasksResult",
        ),
        # server -> client requests (legacy only; embedded input requests on modern)
        _r(
            "sampling/createMessage",
            direction="server_to_client",
            eras=_LEGACY,
            result_type="CreateMessageResult",
        ),
        _r(
            "elicitation/create",
            direction="server_to_client",
            eras=_LEGACY,
            result_type="ElicitResult",
        ),
        _r("roots/list", direction="server_to_client", eras=_LEGACY, result_type="ListRootsResult"),
        # notifications
        _n("notifications/initialized", direction="client_to_server", eras=_LEGACY),
        _n("notifications/cancelled", direction="both"),
        _n("notifications/progress", direction="both"),
        _n("notifications/message"),
        _n("notifications/tools/list_changed"),
        _n("notifications/prompts/list_changed"),
        _n("notifications/resources/list_changed"),
        _n("notifications/resources/updated"),
        _n("notifications/subscriptions/acknowledged", eras=_MODERN),
        _n("notifications/tasks", eras=_MODERN),
        _n("notifications/tasks/status", direction="both", eras=_LEGACY),
        _n("notifications/roots/list_changed", direction="client_to_server", eras=_LEGACY),
        _n("notifications/elicitation/complete", eras=_LEGACY),
    )
}

#: Input requests a server may embed in an ``InputRequiredResult`` and the client
#: capability each one needs.
INPUT_REQUEST_CAPABILITY: Final[dict[str, str]] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


def name_param(method: str) -> str | None:
    """The params member that ``Mcp-Name`` must equal for ``method`` (None if none)."""
    spec = METHODS.get(method)
    return spec.name_param if spec else None


def custom_method(name: str, *, notification: bool = False) -> MethodSpec:
    """The row of a method an extension adds (a server's ``@server.method``): a request or
    a notification from the client, in both eras, gated by no core capability, with no
    ``Mcp-Name`` member (``Mcp-Method`` still names it)."""
    kind: Literal["request", "notification"] = "notification" if notification else "request"
    return MethodSpec(name, kind, "client_to_server", _BOTH)
