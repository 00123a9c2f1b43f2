"""One SDK tracer and meter provider for this folder's in-process tests.

OpenTelemetry's global providers can be set once per process, so the in-memory exporter and
metric reader are installed once (session scope) and each test clears what was exported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from mcpkit.telemetry import otel, set_client_default

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()


@pytest.fixture(scope="session")
def otel_providers() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    otel.recheck()  # an earlier test of the session may have found no provider
    return _EXPORTER, _READER


@pytest.fixture
def spans(otel_providers: Any) -> Iterator[InMemorySpanExporter]:
    """The exporter, emptied, with client spans on by default for this test."""
    exporter = otel_providers[0]
    exporter.clear()
    set_client_default(True)
    try:
        yield exporter
    finally:
        set_client_default(False)


@pytest.fixture
def metric_reader(otel_providers: Any) -> InMemoryMetricReader:
    reader: InMemoryMetricReader = otel_providers[1]
    return reader


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn (serve_http) runs on asyncio only
