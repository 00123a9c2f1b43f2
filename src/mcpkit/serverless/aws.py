"""AWS Lambda: API Gateway REST (v1) and HTTP API (v2) events, and function URLs.

Mangum translates the event into an ASGI request and the buffered response back; the app
behind it is :func:`~.mode.serverless_app` with ``buffered=True`` (Lambda returns the
response in one piece).  Mangum's lifespan handling is switched off: it runs the ASGI
lifespan around *every* invocation, while the app enters the server's lifespan once, on
the first request of the container, and keeps it (and Mangum's event loop) for the
invocations that follow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Unpack

from ..server import Server
from ..types.extras import require
from .mode import AWS_SUFFIXES, ServerlessOptions, serverless_app

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def lambda_handler(
    server: Server,
    *,
    path: str = "/mcp",
    api_gateway_base_path: str = "/",
    **options: Unpack[ServerlessOptions],
) -> LambdaHandler:
    """The ``handler(event, context)`` Lambda calls, serving ``server`` at ``path``.

    Build it at module level (once per container), e.g. ``handler = lambda_handler(server)``.
    ``api_gateway_base_path``: a REST API stage or custom-domain base path to strip.
    The other arguments are :func:`~mcpkit.serverless.serverless_app`'s."""
    mangum = require("mangum", "serverless", "mcpkit.serverless.lambda_handler")
    app = serverless_app(
        server, path=path, platform_suffixes=AWS_SUFFIXES, buffered=True, **options
    )
    handler: LambdaHandler = mangum.Mangum(
        app, lifespan="off", api_gateway_base_path=api_gateway_base_path
    )
    return handler
