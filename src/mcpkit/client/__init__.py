"""The mcpkit client: talk to any MCP server, either protocol era, stdio or Streamable HTTP.

::

    from mcpkit.client import Client

    async with Client("python server.py") as client:
        print(await client.list_tools())
        print(await client.call_tool("add", {"a": 1, "b": 2}))

Everything public is listed in ``__all__``; other names in this package may change.
"""

from .cache import ResultCache
from .callbacks import (
    ElicitationHandler,
    LogHandler,
    NotificationHandler,
    ProgressCallback,
    RootsProvider,
    SamplingHandler,
    UrlElicitationHandler,
)
from .client import Client
from .config import ConfigError
from .errors import (
    ClientError,
    ConnectError,
    ConnectionClosedError,
    HttpStatusError,
    InputRequestError,
    InvalidResultError,
    ProtocolViolationError,
    RequestTimeoutError,
    ServerError,
    ServerStartupError,
    SessionExpiredError,
    ToolError,
    TooManyInputRounds,
    TransportError,
    UrlElicitationRequiredError,
    VersionNegotiationError,
)
from .group import ClientGroup
from .listen import Subscription
from .models import (
    CallToolResult,
    CompleteResult,
    CreateMessageResult,
    DiscoverResult,
    ElicitResult,
    GetPromptResult,
    Implementation,
    Notification,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Root,
    ServerInfo,
    Tool,
    prompt_ref,
    resource_ref,
)
from .options import (
    ClientOptions,
    EraCache,
    FeatureOptions,
    HttpClientOptions,
    ProcessOptions,
    ProtocolOptions,
    TimeoutOptions,
)
from .tasks import Task, TaskCancelled

__all__ = [
    "CallToolResult",
    "Client",
    "ClientError",
    "ClientGroup",
    "ClientOptions",
    "CompleteResult",
    "ConfigError",
    "ConnectError",
    "ConnectionClosedError",
    "CreateMessageResult",
    "DiscoverResult",
    "ElicitResult",
    "ElicitationHandler",
    "EraCache",
    "FeatureOptions",
    "GetPromptResult",
    "HttpClientOptions",
    "HttpStatusError",
    "Implementation",
    "InputRequestError",
    "InvalidResultError",
    "LogHandler",
    "Notification",
    "NotificationHandler",
    "ProcessOptions",
    "ProgressCallback",
    "Prompt",
    "ProtocolOptions",
    "ProtocolViolationError",
    "ReadResourceResult",
    "RequestTimeoutError",
    "Resource",
    "ResourceTemplate",
    "ResultCache",
    "Root",
    "RootsProvider",
    "SamplingHandler",
    "ServerError",
    "ServerInfo",
    "ServerStartupError",
    "SessionExpiredError",
    "Subscription",
    "Task",
    "TaskCancelled",
    "TimeoutOptions",
    "TooManyInputRounds",
    "Tool",
    "ToolError",
    "TransportError",
    "UrlElicitationHandler",
    "UrlElicitationRequiredError",
    "VersionNegotiationError",
    "prompt_ref",
    "resource_ref",
]
