"""mcpkit contender: the same two tools every contender defines.

``echo(text)`` returns the text: a plain ``def`` (mcpkit's default: in a worker thread),
``async def`` when the environment has MCPKIT_BENCH_ASYNC_TOOLS set, and the shape
MCPKIT_BENCH_ECHO names when set: ``def``, ``async`` or ``inline`` (a plain ``def``
registered ``inline=True``, on the event loop).  ``progress_echo(text)`` reports one
progress notification (when the request carries a progressToken) and then returns the
text, so that a 2026-07-28 HTTP request gets an SSE answer.  Served by
``mcpkit serve bench/peers/mcpkit_server.py``.

Variants for A/B runs (``python -m bench --only variants``, see bench/variants.py):
MCPKIT_BENCH_MIDDLEWARE=N adds N middlewares that pass every request on unchanged;
MCPKIT_BENCH_OTEL=api adds the OpenTelemetry span middleware with no SDK configured,
MCPKIT_BENCH_OTEL=sdk with the SDK and a batch processor (exporter discarding),
MCPKIT_BENCH_OTEL=sdk-metrics also with the SDK's meter provider (an in-memory reader).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from mcpkit import Context, Server

if TYPE_CHECKING:  # the --ab-base tree of an older commit need not export CallNext
    from collections.abc import Callable, Sequence

    from mcpkit.server import CallNext

server = Server("bench-mcpkit")

_MIDDLEWARE = int(os.environ.get("MCPKIT_BENCH_MIDDLEWARE") or 0)
if _MIDDLEWARE:
    from mcpkit.server import Middleware

    class PassThrough(Middleware):
        async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
            return await call_next(ctx)

    for _ in range(_MIDDLEWARE):
        server.add_middleware(PassThrough())

_OTEL = os.environ.get("MCPKIT_BENCH_OTEL")
if _OTEL:  # "api": the span middleware, no SDK (no-op tracer); "sdk": SDK + batch processor
    from mcpkit.server.middleware.telemetry import Telemetry

    if _OTEL in ("sdk", "sdk-metrics"):
        from opentelemetry import trace
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        class Discard(SpanExporter):
            """Exports nowhere: the SDK's own cost, not a collector's."""

            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Discard()))
        trace.set_tracer_provider(provider)
    if _OTEL == "sdk-metrics":  # also the meters, as --otel sets them up (exporting nowhere)
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader

        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    server.add_middleware(Telemetry())


#: The echo's shape: "def" (the default), "async" or "inline".
ECHO = os.environ.get("MCPKIT_BENCH_ECHO") or (
    "async" if os.environ.get("MCPKIT_BENCH_ASYNC_TOOLS") else "def"
)
if ECHO not in ("def", "async", "inline"):
    raise SystemExit(f"MCPKIT_BENCH_ECHO must be def, async or inline, not {ECHO!r}")

if ECHO == "async":

    @server.tool(name="echo")  # one name, two variants: mypy types each def once
    async def echo_async(text: str) -> str:
        """Echo the text back."""
        return text

else:
    _echo_tool: Callable[[Callable[[str], str]], Callable[[str], str]] = server.tool
    if ECHO == "inline":
        # A --ab-base tree from before inline= had no thread default either: plain tool.
        with contextlib.suppress(TypeError):
            _echo_tool = server.tool(inline=True)

    @_echo_tool
    def echo(text: str) -> str:
        """Echo the text back."""
        return text


@server.tool
async def progress_echo(text: str, ctx: Context) -> str:
    """Report one progress notification, then echo the text back."""
    await ctx.report_progress(1, 1)
    return text


async def _inproc(n: int) -> None:
    from _inproc import time_calls

    params = {"name": "echo", "arguments": {"text": "hello world"}}

    async def call() -> object:
        return await server.call("tools/call", params)

    await time_calls(call, n)


if __name__ == "__main__":
    import sys

    import anyio

    if sys.argv[1:2] != ["inproc"]:
        raise SystemExit("usage: python mcpkit_server.py inproc N  (serve with `mcpkit serve`)")
    anyio.run(_inproc, int(sys.argv[2]))
