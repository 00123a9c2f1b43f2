"""OpenTelemetry traces from a server and its client, sent to a local OTLP/HTTP endpoint.

    pip install 'mcpkit[otel]'
    python examples/otel_tracing.py                # starts a tiny OTLP/HTTP endpoint itself
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=demo \\
        python examples/otel_tracing.py --external  # your collector / Jaeger (port 4318)

Configuration is the standard OpenTelemetry environment variables, read by the SDK itself
(``mcpkit.telemetry.configure`` only builds the providers): ``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_EXPORTER=none``, ...
Without ``--external`` the example serves ``POST /v1/traces`` on a free 127.0.0.1 port,
decodes what arrives with ``opentelemetry-proto`` and prints one line per span.
"""

from __future__ import annotations

import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.server.middleware.telemetry import Telemetry
from mcpkit.telemetry import configure

server = Server("otel-demo", middleware=[Telemetry()])


@server.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def local_endpoint() -> str:
    """A minimal OTLP/HTTP trace endpoint that prints each span it receives."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        kind = {2: "SERVER", 3: "CLIENT"}.get(span.kind, str(span.kind))
                        print(
                            f"received span {span.name!r} {kind} trace={span.trace_id.hex()}",
                            flush=True,
                        )
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{http.server_address[1]}"


async def main() -> None:
    async with Client(server, telemetry=True) as client:  # CLIENT spans, context in _meta
        result = await client.call_tool("add", {"a": 2, "b": 3})
        print("add ->", result["content"][0]["text"])


if __name__ == "__main__":
    if "--external" not in sys.argv:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = local_endpoint()
    os.environ.setdefault("OTEL_METRICS_EXPORTER", "none")  # traces only, for the demo
    provider = configure(service_name="otel-demo")
    anyio.run(main)
    if provider is not None:
        provider.shutdown()  # flush the batch before exiting
