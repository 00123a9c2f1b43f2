"""Google Cloud Functions (2nd gen) and Cloud Run through functions-framework.

functions-framework serves a Python function behind Starlette (its ASGI mode) and calls
it with a ``starlette.requests.Request``; whatever the function returns is then called as
an ASGI response.  So the function returns an object that hands the request's own
``receive``/``send`` to mcpkit's ASGI app: no body copy, and responses stream (Cloud Run
and Cloud Functions 2nd gen do not buffer them, so listen streams work there).

The function serves MCP at whatever path it is reached on (a function *is* the
endpoint: ``https://REGION-PROJECT.cloudfunctions.net/NAME``).  It is registered with
functions-framework as an ASGI HTTP function under ``name``, which is how
``functions-framework --target NAME`` (and the platform) knows to serve it in ASGI mode.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Unpack

from ..server import Server
from ..transports.http.asgi import Receive, Scope, Send
from ..types.extras import require
from .mode import GCP_SUFFIXES, ServerlessOptions, serverless_app

CloudFunction = Callable[[Any], Awaitable[Any]]


class _Delegate:
    """An ASGI "response" that is the MCP app answering the request itself."""

    __slots__ = ("app", "path")

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope = dict(scope)
        scope["path"] = self.path
        await self.app(scope, receive, send)


def cloud_function_handler(
    server: Server, *, name: str = "mcp", **options: Unpack[ServerlessOptions]
) -> CloudFunction:
    """An HTTP Cloud Function serving ``server``; assign it to a module attribute called
    ``name`` and deploy with ``--entry-point NAME`` (locally: ``functions-framework
    --target NAME --source main.py``).  The other arguments are
    :func:`~mcpkit.serverless.serverless_app`'s."""
    aio = require(
        "functions_framework.aio", "serverless", "mcpkit.serverless.cloud_function_handler"
    )
    path = "/mcp"
    app = serverless_app(server, path=path, platform_suffixes=GCP_SUFFIXES, **options)
    delegate = _Delegate(app, path)

    async def function(request: Any) -> _Delegate:
        return delegate

    function.__name__ = function.__qualname__ = name
    registered: CloudFunction = aio.http(function)
    return registered
