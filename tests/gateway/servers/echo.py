"""A small upstream for the gateway tests: it reports what reached it.

Everything it returns comes from the request it received or from counters it keeps, so a
test can check *at the upstream* what the gateway forwarded (``_meta`` with the W3C trace
context, how often it was initialized, how often it was asked for its lists).

Configured through the environment, so one file serves several upstreams::

    ECHO_NAME=alpha mcpkit serve tests/gateway/servers/echo.py --http --port 9001
    ECHO_TTL_MS=0 ECHO_CACHE_SCOPE=private ...   # ttlMs / cacheScope of its list results
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import anyio

from mcpkit import Context, Server
from mcpkit.types.versions import Era

NAME = os.environ.get("ECHO_NAME", "echo")


class CountingServer(Server):
    """Counts every request it dispatches, and every ``initialize`` it answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts: Counter[str] = Counter()

    def capabilities(self, era: Era = "modern") -> dict[str, Any]:
        if era == "legacy":  # asked only while answering initialize
            self.counts["initialize"] += 1
        return super().capabilities(era)

    async def dispatch(self, message: Any, meta: Any, exchange: Any, **kw: Any) -> dict[str, Any]:
        # initialize passes through dispatch too (the legacy session's answer, since issue
        # #17); it is counted where it is answered, in capabilities() above.
        if message["method"] != "initialize":
            self.counts[message["method"]] += 1
        return await super().dispatch(message, meta, exchange, **kw)


server = CountingServer(
    f"echo-{NAME}",
    "1.0.0",
    cache_ttl_ms=int(os.environ.get("ECHO_TTL_MS", "60000")),
    cache_scope=os.environ.get("ECHO_CACHE_SCOPE", "public"),
)


@server.tool
def whoami() -> str:
    """The name of this upstream."""
    return NAME


@server.tool
def echo_meta(ctx: Context) -> dict[str, Any]:
    """What this upstream received: the request's _meta and the era it came in."""
    meta = ctx.params.get("_meta")
    return {"server": NAME, "era": ctx.era, "meta": meta if isinstance(meta, dict) else {}}


@server.tool
def stats() -> dict[str, int]:
    """Requests dispatched so far, by method (plus ``initialize``)."""
    return dict(server.counts)


@server.tool
def add_tool(name: str) -> str:
    """Register one more tool (listeners get tools/list_changed)."""

    def added() -> str:
        return f"{name} from {NAME}"

    server.tool(added, name=name, description="Added at run time")
    return f"added {name}"


@server.tool
def pid() -> int:
    """The process id (a restarted upstream has a new one)."""
    return os.getpid()


@server.tool
def die() -> str:
    """Exit at once, in the middle of the call."""
    os._exit(3)


@server.tool
async def ask(ctx: Context) -> str:
    """Ask the user's name (elicitation), then greet."""
    answer = await ctx.elicit(
        f"{NAME} asks: what is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    name = (answer.get("content") or {}).get("name")
    return f"{NAME} greets {name} ({answer.get('action')})"


@server.prompt
def greeting(who: str) -> str:
    """A greeting from this upstream."""
    return f"{NAME} says hello to {who}"


@server.resource(f"echo://{NAME}/info", name="info", mime_type="text/plain")
def info() -> str:
    return f"info of {NAME}"


@server.resource(f"echo://{NAME}/items/{{id}}", name="item", mime_type="text/plain")
def item(id: str) -> str:
    return f"item {id} of {NAME}"


@server.completion
def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
    return [f"{NAME}-{argument.get('value', '')}"]


@server.tool
def touch(uri: str) -> str:
    """Announce that ``uri`` changed (``notifications/resources/updated`` to its watchers)."""
    server.notify_resource_updated(uri)
    return uri


@server.tool
def blob(size: int) -> str:
    """``size`` bytes of text (for the gateway's answer-size caps)."""
    return "x" * size


@server.tool(annotations={"idempotentHint": True})
async def nap(seconds: float = 0.0) -> str:
    """Sleep, then say which upstream answered (idempotent: safe to retry elsewhere)."""
    await anyio.sleep(seconds)
    return NAME


@server.tool
async def hold(key: str, seconds: float = 30.0) -> str:
    """Wait ``seconds``, counting ``held:<key>``; a wait cut short by a cancellation (the
    caller went away) counts ``cancelled:<key>`` (read with ``stats``)."""
    server.counts[f"held:{key}"] += 1
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        server.counts[f"cancelled:{key}"] += 1
        raise
    return key
