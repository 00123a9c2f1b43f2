"""Middleware and the server toolkit: one hook for every request, whatever the transport.

    mcpkit serve examples/middleware.py --http --port 8000   # serve it (or without --http: stdio)
    python examples/middleware.py                            # a short in-process tour

What it shows:

* an ``Audit`` middleware (``on_request`` for every request, ``on_call_tool`` for calls)
  that stamps each tool result with the tenant from the ``X-Tenant`` header (none on stdio);
* built-ins: one log line per request (``Timing``), error masking with a correlation id
  (``mask_errors=True``), a per-tool timeout, a response size limit and a rate limit
  (``limits``, from ``pip install 'mcpkit[gateway]'``);
* tags and a per-request visibility filter: ``admin`` tools exist only for the principal
  ``root`` (anyone else gets "Unknown tool", exactly as for a name that does not exist);
* ``ctx.request`` (headers, client, era), ``ctx.read_resource`` through the middleware,
  JSON-string arguments for object parameters, and a plain ``def`` tool kept on the event
  loop with ``inline=True`` (plain ``def`` tools otherwise run in a worker thread).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio

from mcpkit import Context, Server
from mcpkit.server import CallNext, Middleware
from mcpkit.server.middleware.size import ResponseSizeLimit
from mcpkit.server.middleware.timing import Timing


class Audit(Middleware):
    """Counts requests and stamps every tool result with the caller's tenant."""

    def __init__(self) -> None:
        self.requests = 0

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.requests += 1
        return await call_next(ctx)

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        result = await call_next(ctx)
        tenant = ctx.request.header("x-tenant", "none")
        return {**result, "_meta": {**result.get("_meta", {}), "example/tenant": tenant}}


audit = Audit()
middleware: list[Middleware] = [audit, Timing(), ResponseSizeLimit(max_bytes=64_000)]
try:
    from mcpkit.server.middleware.ratelimit import RateLimit, RateRule

    middleware.append(RateLimit(RateRule("100/minute", methods=("tools/call",))))
except ImportError:  # the limits library is not installed: no rate limit
    pass

server = Server("middleware-demo", "1.0.0", middleware=middleware, mask_errors=True)


@server.visibility_filter
def admins_only(ctx: Context, kind: str, name: str, tags: frozenset[str]) -> bool:
    """``admin`` items exist only for the principal "root"."""
    return "admin" not in tags or ctx.principal == "root"


@server.tool(inline=True)
def add(a: float, b: float) -> float:
    """Add two numbers (quick and non-blocking: runs on the event loop)."""
    return a + b


@server.tool
def fetch_report(name: str) -> str:
    """A blocking call (say, requests.get): a plain def runs in a worker thread."""
    time.sleep(0.01)
    return f"report {name}"


@server.tool(timeout=0.5)
async def slow(seconds: float) -> str:
    """Takes ``seconds``; more than 0.5 s is cancelled and answered as an error."""
    await anyio.sleep(seconds)
    return "done"


@server.tool
def divide(a: float, b: float) -> float:
    """Fails for b == 0; with mask_errors the client sees a correlation id, not the text."""
    return a / b


@server.tool
def plot(points: list[dict[str, float]]) -> str:
    """Accepts a real list or the JSON string of one (as language models often send)."""
    return f"{len(points)} points"


@server.tool(tags={"admin"})
def purge_cache() -> str:
    """Only the principal "root" sees or may call this."""
    return "purged"


@server.tool
async def whoami(ctx: Context) -> dict[str, Any]:
    """What the server knows about this request."""
    request = ctx.request
    motd = await ctx.read_resource("note://motd")  # through the middleware too
    return {
        "era": request.era,
        "client": (request.client_info or {}).get("name"),
        "tenant": request.header("x-tenant"),
        "motd": motd["contents"][0]["text"],
    }


@server.resource("note://motd", mime_type="text/plain")
def motd() -> str:
    return "Welcome."


async def tour() -> None:
    async def call(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return await server.call("tools/call", {"name": name, "arguments": arguments or {}})

    def text(result: dict[str, Any]) -> str:
        return str(result["content"][0]["text"])

    async with server.running():
        print("add ->", text(await call("add", {"a": 2, "b": 3})))
        print("fetch_report ->", text(await call("fetch_report", {"name": "q3"})))
        print("slow(2) ->", text(await call("slow", {"seconds": 2})))
        masked = await call("divide", {"a": 1, "b": 0})
        print("divide(1, 0) ->", text(masked))
        print("plot (JSON string) ->", text(await call("plot", {"points": '[{"x": 1}]'})))
        print("whoami ->", (await call("whoami"))["structuredContent"])
        tools = await server.call("tools/list")
        print("tools an anonymous caller sees:", [t["name"] for t in tools["tools"]])
        try:
            await call("purge_cache")
        except Exception as exc:
            print("purge_cache as anonymous ->", exc)
        print("requests seen by the audit middleware:", audit.requests)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    anyio.run(tour)
