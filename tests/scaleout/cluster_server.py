"""The conformance fixture server plus handle tools, for the scale-out tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from mcpkit import Context, Server

_spec = importlib.util.spec_from_file_location(
    "_conformance_fixture", Path(__file__).resolve().parents[1] / "conformance" / "server.py"
)
assert _spec is not None and _spec.loader is not None
_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixture)
server: Server = _fixture.server


@server.tool
async def basket_create(ctx: Context, ttl_s: float = 600.0) -> dict[str, Any]:
    """Create an empty basket; returns its handle."""
    return {"basket_id": await ctx.handles.mint("bsk", {}, ttl_s=ttl_s)}


@server.tool
async def basket_add(basket_id: str, item: str, ctx: Context) -> dict[str, Any]:
    """Add one item to a basket."""

    def add(items: dict[str, int]) -> dict[str, int]:
        items[item] = items.get(item, 0) + 1
        return items

    return {"items": await ctx.handles.update(basket_id, add, kind="bsk")}


@server.tool
async def basket_view(basket_id: str, ctx: Context) -> dict[str, Any]:
    """The basket's items."""
    return {"items": await ctx.handles.get(basket_id, kind="bsk")}
