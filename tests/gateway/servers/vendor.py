"""An upstream with an extension's custom methods, for the gateway tests.

``VENDOR_EXTENSION`` (default ``com.example/probe``) names the extension; its methods:

* ``<extension>/echo`` (request): answers ``{"upstream": ECHO_NAME, "era": ..., "params": ...}``
  (what reached it, and in which protocol era);
* ``<extension>/fail`` (request): answers the JSON-RPC error -32602 with ``data``;
* ``<extension>/steps`` (request): sends ``count`` notifications ``<extension>/step``
  (``{"n": i, "text": text}``) on the request's stream, then answers ``{"steps": count}``.

Declared with settings ``{"upstream": ECHO_NAME}`` under ``capabilities.extensions``.
"""

from __future__ import annotations

import os
from typing import Any

from mcpkit import Context, Server
from mcpkit.types.errors import invalid_params

NAME = os.environ.get("ECHO_NAME", "vendor")
EXTENSION = os.environ.get("VENDOR_EXTENSION", "com.example/probe")

server = Server(NAME, "1.0.0")
server.extension(EXTENSION, {"upstream": NAME})


@server.method(f"{EXTENSION}/echo")
def echo(ctx: Context, text: str = "", count: int = 0) -> dict[str, Any]:
    """What reached this upstream, and in which era."""
    return {"upstream": NAME, "era": ctx.meta.era, "params": {"text": text, "count": count}}


@server.method(f"{EXTENSION}/fail")
def fail() -> dict[str, Any]:
    """Always refused, with data the caller should see as the upstream sent it."""
    raise invalid_params("no such thing", {"upstream": NAME})


@server.tool
def ping_tool() -> str:
    """A plain tool (the gateway lists something of this upstream)."""
    return NAME


@server.method(f"{EXTENSION}/steps")
async def steps(ctx: Context, text: str = "", count: int = 0) -> dict[str, Any]:
    """Notifications related to this request, then the answer."""
    for n in range(count):
        await ctx.notify(f"{EXTENSION}/step", {"n": n, "text": text})
    return {"steps": count}
