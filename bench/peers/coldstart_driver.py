"""One Lambda cold start, in this fresh process: import, build the handler, answer one call.

usage: python coldstart_driver.py mcpkit|sdk|fastmcp

Every contender is wrapped the same way, as its users deploy it on Lambda: Mangum around
its ASGI app (mcpkit: ``mcpkit.serverless.lambda_handler``, the example under
``examples/serverless/``; the SDK and FastMCP: their stateless JSON Streamable HTTP app, with
Mangum's default lifespan handling, which their session manager needs).  The handler is
called once with a Lambda function URL event carrying a 2026-07-28 ``tools/call`` of
``echo``; the answer is checked.  Prints one JSON line: seconds from the first line of this
script to the handler being built (``import_s``) and to the answer (``first_call_s``).
The interpreter's own start-up is measured by the caller (``bench/coldstart.py``).
"""

import time

T0 = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HOST = "abcdefghijklmnopqrstuvwxyz0123.lambda-url.us-east-1.on.aws"


def build(name: str) -> Any:  # a Lambda handler: each framework's own
    if name == "mcpkit":
        here = Path(__file__).resolve().parents[2] / "examples" / "serverless"
        sys.path.insert(0, str(here))
        from lambda_function import handler

        return handler
    from mangum import Mangum

    if name == "sdk":
        from mcp.server.transport_security import TransportSecuritySettings
        from sdk_server import mcp

        # The SDK answers 421 to a host it was not told about (it allows loopback only):
        # deploying it on Lambda means naming the function URL's host.
        security = TransportSecuritySettings(allowed_hosts=[HOST])
        app = mcp.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=security
        )
        return Mangum(app)
    if name == "fastmcp":
        from fastmcp_server import mcp

        return Mangum(mcp.http_app(stateless_http=True, json_response=True))
    raise SystemExit(f"unknown contender {name}")


def function_url_event() -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "cold"}, "_meta": meta},
    }
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": {
            "host": HOST,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "echo",
            "x-forwarded-proto": "https",
            "x-forwarded-port": "443",
        },
        "requestContext": {
            "accountId": "anonymous",
            "apiId": HOST.split(".", 1)[0],
            "domainName": HOST,
            "domainPrefix": HOST.split(".", 1)[0],
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "bench",
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


def main() -> None:
    handler = build(sys.argv[1])
    built = time.perf_counter()
    response = handler(function_url_event(), None)
    done = time.perf_counter()
    body = json.loads(response["body"])
    text = body.get("result", {}).get("content", [{}])[0].get("text")
    if response["statusCode"] != 200 or text != "cold":
        raise SystemExit(f"bad answer: {response['statusCode']} {response['body'][:300]}")
    print(json.dumps({"import_s": built - T0, "first_call_s": done - T0}))


if __name__ == "__main__":
    main()
