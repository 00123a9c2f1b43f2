"""OpenTelemetry traces and metrics for every role (``pip install 'mcpkit[otel]'``).

Follows the OpenTelemetry semantic conventions for MCP (semantic-conventions-genai v0.1.0,
``docs/gen-ai/mcp.md``, status Development): span names ``{mcp.method.name} {target}``,
SERVER spans for requests a server answers, CLIENT spans for requests a client sends,
trace context carried in ``params._meta`` (``traceparent``, ``tracestate``, ``baggage``)
and the ``mcp.{server,client}.operation.duration`` histograms.

This package sits below ``server`` and ``client`` (both import it) and imports only the
OpenTelemetry *API*, lazily: without ``opentelemetry-api`` installed nothing here is
imported by a request.  Spans are opt-in (the server's
:class:`~mcpkit.server.middleware.telemetry.Telemetry` middleware,
``Client(..., telemetry=True)``), so a process that merely has the API installed
(many libraries pull it in) pays nothing.  :func:`configure` sets up the SDK from the
standard ``OTEL_*`` environment variables for the command line's ``--otel``.
"""

from __future__ import annotations

from .otel import available, set_client_default
from .setup import configure

__all__ = ["available", "configure", "set_client_default"]
