"""An OTLP/HTTP receiver for the tests: ``POST /v1/traces`` and ``/v1/metrics`` with
protobuf bodies, decoded with ``opentelemetry-proto`` (the collector's own message types)
and kept for the test to read.  A thread on 127.0.0.1, a free port."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

T = TypeVar("T")


class Receiver:
    def __init__(self) -> None:
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    request: Any = ExportTraceServiceRequest.FromString(body)
                    reply: Any = ExportTraceServiceResponse()
                    with receiver.lock:
                        receiver.traces.append(request)
                elif self.path == "/v1/metrics":
                    request = ExportMetricsServiceRequest.FromString(body)
                    reply = ExportMetricsServiceResponse()
                    with receiver.lock:
                        receiver.metrics.append(request)
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                payload = reply.SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()

    def spans(self) -> list[tuple[str, Any]]:
        """(service.name, span) for every span received so far."""
        out: list[tuple[str, Any]] = []
        with self.lock:
            for request in self.traces:
                for rs in request.resource_spans:
                    service = next(
                        (
                            a.value.string_value
                            for a in rs.resource.attributes
                            if a.key == "service.name"
                        ),
                        "",
                    )
                    for ss in rs.scope_spans:
                        out.extend((service, span) for span in ss.spans)
        return out

    def metric_names(self) -> set[str]:
        with self.lock:
            return {
                m.name
                for request in self.metrics
                for rm in request.resource_metrics
                for sm in rm.scope_metrics
                for m in sm.metrics
            }
