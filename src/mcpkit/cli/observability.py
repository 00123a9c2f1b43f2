"""``--otel``, ``--metrics`` and ``--log-format json``: one place for every long-running
command (``serve``, ``gateway``, ``host``), so they mean the same thing everywhere.

``--otel`` sets up the OpenTelemetry SDK from the standard ``OTEL_*`` environment variables
(:func:`mcpkit.telemetry.configure`), adds the SERVER-span middleware to a command that
serves, and turns on CLIENT spans for the clients the process opens (a gateway's upstreams,
a host's servers).  ``--log-format json`` writes each log record as one JSON object with
the current trace and span ids, so log lines can be joined with the trace they belong to;
uvicorn's own loggers then write through it too (:func:`uvicorn_log_config`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any

from ..types.errors import INVALID_REQUEST, McpError

__all__ = [
    "JsonFormatter",
    "add_arguments",
    "setup",
    "setup_logging",
    "uvicorn_log_config",
    "with_metrics",
]

#: The text format of the commands' log lines (``--log-format text``).
TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"


def add_arguments(p: argparse.ArgumentParser, *, metrics: bool) -> None:
    g = p.add_argument_group("observability (--otel needs the 'otel' extra)")
    g.add_argument(
        "--otel",
        action="store_true",
        help="export OpenTelemetry traces and metrics over OTLP/HTTP, configured by the "
        "standard OTEL_* environment variables (OTEL_EXPORTER_OTLP_ENDPOINT, "
        "OTEL_SERVICE_NAME, ...)",
    )
    if metrics:
        g.add_argument(
            "--metrics",
            action="store_true",
            help="serve the OpenTelemetry metrics in Prometheus format at /metrics",
        )
    g.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one JSON object per log line, with trace_id and span_id",
    )


def setup_logging(args: argparse.Namespace, *, text: bool = False) -> None:
    """``--log-format``/``--log-level`` on the root logger.  ``text``: also install the
    text handler (a command whose text lines nobody else sets up, like ``host``); serve
    and gateway leave text mode to Python's and uvicorn's defaults, as before."""
    level = args.log_level.upper() if isinstance(args.log_level, str) else "WARNING"
    if args.log_format == "json":
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(level)
    elif text:
        logging.basicConfig(level=level, stream=sys.stderr, format=TEXT_FORMAT)


def uvicorn_log_config(args: argparse.Namespace) -> dict[str, Any]:
    """uvicorn's ``log_config`` option: None in JSON mode, so that uvicorn installs no
    text handlers of its own and its loggers reach the JSON one on the root logger."""
    return {"log_config": None} if args.log_format == "json" else {}


def setup(args: argparse.Namespace, server: Any, name: str) -> None:
    """Apply the observability flags (before serving).  ``server`` gets the SERVER-span
    middleware; None (``host``) only turns on the clients' spans."""
    setup_logging(args, text=server is None)
    gateway_metrics: Any = getattr(server, "metrics", None)  # a gateway's own /metrics
    prometheus = bool(getattr(args, "metrics", False))
    if not (args.otel or prometheus):
        return
    if args.otel and hasattr(gateway_metrics, "with_otel"):
        prometheus = gateway_metrics.with_otel = True  # its /metrics serves them too
    from ..telemetry import configure, set_client_default

    if configure(service_name=name, prometheus=prometheus, export=args.otel) is None:
        return  # OTEL_SDK_DISABLED=true: no middleware, not even its pass-through
    set_client_default(True)
    if server is not None:
        from ..server.middleware.telemetry import Telemetry

        server.add_middleware(Telemetry())


def with_metrics(make_app: Any) -> Any:
    """``make_app`` (None: the plain MCP app) behind a front that answers ``GET /metrics``
    from ``prometheus_client``'s default registry, where the OTel Prometheus reader keeps
    the ``mcp.server.operation.duration`` histogram and the others."""
    from prometheus_client import make_asgi_app

    from ..transports.http import McpHttpApp

    metrics = make_asgi_app()

    def make(server: Any, options: Any) -> Any:
        inner = make_app(server, options) if make_app is not None else McpHttpApp(server, options)
        return _MetricsFront(inner, metrics, options.host_policy)

    return make


class _MetricsFront:
    """``/metrics`` here, after the Host/Origin check of ``/mcp`` (``policy``: a
    DNS-rebinding page must not read it either); everything else (and the lifespan) to the
    MCP app.  ``app`` is the inner app, as the server's shutdown looks for it."""

    def __init__(self, app: Any, metrics: Any, policy: Any) -> None:
        self.app = app
        self.metrics = metrics
        self.policy = policy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/metrics":
            from ..transports.http.asgi import header_map, send_error

            headers = header_map(scope)
            if self.policy.host_ok(headers.get("host")) and self.policy.origin_ok(
                headers.get("origin")
            ):
                await self.metrics(scope, receive, send)
            else:
                refusal = McpError(INVALID_REQUEST, "Forbidden: Host or Origin not allowed")
                await send_error(send, 403, refusal)
        else:
            await self.app(scope, receive, send)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the record's ``extra``
    fields, and ``trace_id``/``span_id`` of the span current when it was logged (when
    OpenTelemetry is installed and a span is recording)."""

    _STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
        "message",
        "asctime",
        "taskName",
    }

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_trace_ids())
        for key, value in vars(record).items():
            if key not in self._STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _trace_ids() -> dict[str, str]:
    try:
        from opentelemetry import trace
    except ImportError:
        return {}
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return {}
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}
