"""AWS Lambda entry point: set the function's handler to ``lambda_function.handler``.

Package: ``pip install --target package 'mcpkit[serverless]'``, add this file and
``server.py``, zip, and set ``MCPKIT_SEALING_KEYS`` in the function's environment.  Works
behind a function URL, an HTTP API (payload 2.0) or a REST API (proxy integration).

Run it here: ``MCPKIT_SEALING_KEYS=dev python examples/serverless/lambda_function.py``
invokes the handler with a function URL event the way Lambda would, and prints the answer.
"""

from __future__ import annotations

import json

from mcpkit.serverless import lambda_handler
from server import server

handler = lambda_handler(server)  # module level: once per container


def _function_url_event(body: dict[str, object]) -> dict[str, object]:
    """A Lambda function URL event (payload format 2.0), as AWS documents it."""
    method = str(body["method"])
    name = body.get("params", {}).get("name")  # type: ignore[union-attr]
    headers = {
        "host": "abcdefg.lambda-url.us-east-1.on.aws",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name:
        headers["mcp-name"] = str(name)
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abcdefg",
            "domainName": "abcdefg.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abcdefg",
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "example",
            },
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Dec/2026:12:00:00 +0000",
            "timeEpoch": 1796126400000,
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


if __name__ == "__main__":
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello from Lambda"}, "_meta": meta},
    }
    response = handler(_function_url_event(call), None)
    print(response["statusCode"], json.loads(response["body"])["result"]["content"][0]["text"])
