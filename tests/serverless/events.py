"""Lambda events as AWS documents them, for one MCP POST.

* REST API (v1) proxy integration: ``resource``/``path``/``httpMethod``, ``headers`` and
  ``multiValueHeaders``, ``requestContext`` with ``stage`` and ``identity``;
* HTTP API payload format 2.0: ``version: "2.0"``, ``rawPath``, ``requestContext.http``;
* function URL: payload 2.0 with the sentinel ``routeKey``/``stage`` ``$default`` and a
  ``<url-id>.lambda-url.<region>.on.aws`` host.

And the Lambda response, read back the way each front end reads it.
"""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

from support.mcp import modern_headers

MODERN = "2026-07-28"
SHAPES = ("rest_v1", "http_v2", "function_url")
HOSTS = {
    "rest_v1": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
    "http_v2": "f6g7h8i9j0.execute-api.eu-west-1.amazonaws.com",
    "function_url": "abcdefghijklmnopqrstuvwxyz0123.lambda-url.us-east-1.on.aws",
}


def context() -> Any:
    """The attributes of Lambda's context object that frameworks read."""
    return SimpleNamespace(
        function_name="mcp",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:mcp",
        memory_limit_in_mb=512,
        aws_request_id="5f1b1c5e-0000-4000-8000-000000000001",
        log_group_name="/aws/lambda/mcp",
        log_stream_name="2026/12/01/[$LATEST]abcdef",
        get_remaining_time_in_millis=lambda: 30_000,
    )


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


def event(
    shape: str,
    body: bytes | str | dict[str, Any] | None,
    headers: dict[str, str],
    *,
    method: str = "POST",
    path: str = "/mcp",
    host: str | None = None,
) -> dict[str, Any]:
    host = host or HOSTS[shape]
    heads = {"host": host, "x-forwarded-proto": "https", "x-forwarded-port": "443", **headers}
    if shape != "rest_v1":  # payload 2.0 lower-cases header names; REST v1 keeps the client's
        heads = {name.lower(): value for name, value in heads.items()}
    text = json.dumps(body) if isinstance(body, dict) else body
    if isinstance(text, bytes):
        text = text.decode()
    if shape == "rest_v1":
        return {
            "resource": path,
            "path": path,
            "httpMethod": method,
            "headers": heads,
            "multiValueHeaders": {k: [v] for k, v in heads.items()},
            "queryStringParameters": None,
            "multiValueQueryStringParameters": None,
            "pathParameters": None,
            "stageVariables": None,
            "requestContext": {
                "accountId": "123456789012",
                "apiId": host.split(".", 1)[0],
                "domainName": host,
                "domainPrefix": host.split(".", 1)[0],
                "extendedRequestId": "c6af9ac6-ext",
                "httpMethod": method,
                "identity": {"sourceIp": "203.0.113.7", "userAgent": "mcp-test"},
                "path": f"/prod{path}",
                "protocol": "HTTP/1.1",
                "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
                "requestTime": "01/Dec/2026:12:00:00 +0000",
                "requestTimeEpoch": 1796126400000,
                "resourceId": "abc123",
                "resourcePath": path,
                "stage": "prod",
            },
            "body": text,
            "isBase64Encoded": False,
        }
    route = "$default" if shape == "function_url" else f"{method} {path}"
    return {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": "",
        "headers": heads,
        "requestContext": {
            "accountId": "anonymous" if shape == "function_url" else "123456789012",
            "apiId": host.split(".", 1)[0],
            "domainName": host,
            "domainPrefix": host.split(".", 1)[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "mcp-test",
            },
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "routeKey": route,
            "stage": "$default",
            "time": "01/Dec/2026:12:00:00 +0000",
            "timeEpoch": 1796126400000,
        },
        "body": text,
        "isBase64Encoded": False,
    }


def request_event(shape: str, message: dict[str, Any], **headers: str) -> dict[str, Any]:
    """A modern (2026-07-28) MCP request as one POST event (``headers`` override the
    correct ones, ``_`` for ``-``)."""
    return event(shape, message, modern_headers(message, **headers))


class Reply:
    """A Lambda proxy response: status, lower-case headers, decoded body."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.status: int = response["statusCode"]
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers[name.lower()] = values[-1]
        self.headers = headers
        body = response.get("body") or ""
        if response.get("isBase64Encoded"):
            body = base64.b64decode(body).decode()
        self.text: str = body

    def json(self) -> Any:
        assert self.headers.get("content-type", "").startswith("application/json"), self.headers
        return json.loads(self.text)
