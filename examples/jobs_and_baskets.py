"""Durable work and state between calls, the 2026-07-28 way.

* ``render_report`` runs as a task (tasks extension): the client gets a task id at once
  and polls ``tasks/get``; any replica sharing the state backend can answer.
* ``approve_payment`` asks for confirmation *inside* its task (``input_required``,
  answered with ``tasks/update``).
* Baskets are handles: ``basket_create`` mints an opaque, expiring id bound to the
  caller; the other tools take it back as an ordinary argument.  An unknown or expired
  basket is a tool error that says so.

Run three replicas behind any load balancer::

    mcpkit serve examples/jobs_and_baskets.py --http --port 8001 --state redis://127.0.0.1:6379/0
    mcpkit serve examples/jobs_and_baskets.py --http --port 8002 --state redis://127.0.0.1:6379/0

or one process with the embedded SQLite default::

    mcpkit serve examples/jobs_and_baskets.py --http
"""

from __future__ import annotations

from typing import TypedDict

import anyio

from mcpkit import Context, Server

server = Server("jobs-and-baskets", "1.0.0")

BASKET_TTL_S = 1800.0


class Basket(TypedDict):
    basket_id: str
    items: dict[str, int]


@server.tool(task="optional")
async def render_report(pages: int = 3) -> str:
    """Render a report of `pages` pages (about 1 s per page; runs as a task)."""
    for _ in range(pages):
        await anyio.sleep(1.0)
    return f"Rendered a {pages}-page report."


@server.tool(task="required")
async def approve_payment(amount: float, ctx: Context) -> str:
    """Pay `amount` after the user confirms (inside the task)."""
    answer = await ctx.elicit(
        f"Approve a payment of {amount:.2f}?",
        {"type": "object", "properties": {"approve": {"type": "boolean"}}, "required": ["approve"]},
    )
    if answer.get("action") == "accept" and (answer.get("content") or {}).get("approve"):
        return f"Paid {amount:.2f}."
    return "Payment declined."


@server.tool
async def basket_create(ctx: Context) -> Basket:
    """Create an empty basket.  The basket id expires 30 minutes after its last use."""
    basket_id = await ctx.handles.mint("bsk", {}, ttl_s=BASKET_TTL_S)
    return {"basket_id": basket_id, "items": {}}


@server.tool
async def basket_add(basket_id: str, item: str, ctx: Context, quantity: int = 1) -> Basket:
    """Add `quantity` of `item` to a basket."""

    def add(items: dict[str, int]) -> dict[str, int]:
        items[item] = items.get(item, 0) + quantity
        return items

    items = await ctx.handles.update(basket_id, add, kind="bsk")
    return {"basket_id": basket_id, "items": items}


@server.tool
async def basket_view(basket_id: str, ctx: Context) -> Basket:
    """What is in the basket."""
    return {"basket_id": basket_id, "items": await ctx.handles.get(basket_id, kind="bsk")}


@server.tool
async def basket_destroy(basket_id: str, ctx: Context) -> str:
    """Throw the basket away."""
    await ctx.handles.drop(basket_id, kind="bsk")
    return "Basket destroyed."
