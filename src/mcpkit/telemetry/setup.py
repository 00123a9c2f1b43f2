"""The OpenTelemetry SDK set up from the standard ``OTEL_*`` environment variables.

A library never configures the SDK (the application owns its providers); the command line
is an application, so ``mcpkit serve --otel`` and ``mcpkit gateway --otel`` call
:func:`configure`.  Nothing here reads an environment variable itself: the SDK's
``Resource.create()`` reads ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, the
OTLP/HTTP exporters read ``OTEL_EXPORTER_OTLP_ENDPOINT`` (and the per-signal, header,
timeout and compression variables), the batch processor ``OTEL_BSP_*``, so every
documented variable works exactly as it does for any other OpenTelemetry program.
"""

from __future__ import annotations

import os
from typing import Any

from ..types.extras import require
from .otel import recheck

__all__ = ["configure", "prometheus_reader"]

_FEATURE = "exporting OpenTelemetry data (--otel)"


def configure(
    *, service_name: str | None = None, prometheus: bool = False, export: bool = True
) -> Any:
    """Install an SDK tracer provider (OTLP/HTTP, batched) and meter provider as the
    global ones, unless ``OTEL_SDK_DISABLED=true``.  ``service_name`` is only a fallback
    for ``OTEL_SERVICE_NAME``.  ``prometheus``: also keep the metrics for a Prometheus
    scrape (``/metrics``); ``export=False``: no OTLP exporters (``--metrics`` alone).
    Returns the tracer provider (None when disabled); the SDK flushes what is still
    batched when the process exits."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    require("opentelemetry.sdk", "otel", _FEATURE)
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attrs = {}
    if service_name and not os.environ.get("OTEL_SERVICE_NAME"):
        attrs["service.name"] = service_name
    resource = Resource.create(attrs)
    tracer_provider = TracerProvider(resource=resource)
    readers: list[Any] = []
    if export and _exporter_wanted("OTEL_TRACES_EXPORTER"):
        otlp = require("opentelemetry.exporter.otlp.proto.http.trace_exporter", "otel", _FEATURE)
        tracer_provider.add_span_processor(BatchSpanProcessor(otlp.OTLPSpanExporter()))
    if export and _exporter_wanted("OTEL_METRICS_EXPORTER"):
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        otlp_metrics = require(
            "opentelemetry.exporter.otlp.proto.http.metric_exporter", "otel", _FEATURE
        )
        readers.append(PeriodicExportingMetricReader(otlp_metrics.OTLPMetricExporter()))
    if prometheus:
        readers.append(prometheus_reader())
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))
    recheck()
    return tracer_provider


def prometheus_reader() -> Any:
    """A reader that keeps the OTel metrics in ``prometheus_client``'s default registry,
    which ``/metrics`` then serves."""
    exporter = require("opentelemetry.exporter.prometheus", "otel", "--metrics")
    return exporter.PrometheusMetricReader()


def _exporter_wanted(variable: str) -> bool:
    """``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER``: ``otlp`` (the default) or
    ``none``; only OTLP is built in."""
    value = os.environ.get(variable, "otlp").strip().lower()
    if value in ("none", ""):
        return False
    if value != "otlp":
        raise ValueError(f"{variable}={value!r}: mcpkit --otel exports only 'otlp' (or 'none')")
    return True
