"""Run an mcpkit server on a function platform: AWS Lambda, Google Cloud Functions, Cloud Run.

Each adapter is a one-liner around the same ASGI app in serverless mode (see
:mod:`.mode` for what that mode refuses and why)::

    handler = lambda_handler(server)          # AWS Lambda (API Gateway v1/v2, function URL)
    mcp = cloud_function_handler(server)      # Cloud Functions / functions-framework
    app = serverless_app(server)              # Cloud Run or any container: a plain ASGI app

The adapters' libraries (mangum, functions-framework) come with ``mcpkit[serverless]`` and
are imported only when an adapter is called, so importing this module costs neither.
"""

from __future__ import annotations

from .aws import lambda_handler
from .gcp import cloud_function_handler
from .mode import ServerlessError, serverless_app

__all__ = ["ServerlessError", "cloud_function_handler", "lambda_handler", "serverless_app"]
