"""Test server "gamma" (mcpkit, served over HTTP): tools with ``x-mcp-header`` annotations,
one valid and one invalid (a header on a ``number``, which HTTP clients must drop)."""

from __future__ import annotations

from mcpkit import Server

server = Server("gamma", "1.0.0")


@server.tool(
    input_schema={
        "type": "object",
        "required": ["region", "query"],
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
        },
    }
)
def lookup(region: str, query: str) -> str:
    """Look something up in a region (the region travels as an HTTP header too)."""
    return f"{region}: {query}"


@server.tool(input_schema={"type": "object", "properties": {"amount": {"type": "number"}}})
def bad_header(amount: float = 0) -> str:
    """Annotated wrongly on purpose (see below)."""
    return str(amount)


# Our framework refuses such an annotation at registration, so it is slipped into the
# listing afterwards, as a careless or hostile server would send it.
server.tools["bad_header"].wire["inputSchema"]["properties"]["amount"]["x-mcp-header"] = "Amount"
