"""An upstream serving an MCP App and an admin tool, for the policy tests: ``panel``
names its ``ui://`` view (which makes the gateway take the upstream's own names for its
tools, as an App calls them), ``secret_admin`` is the tool a scope guards, and
``vault://`` resources are what a rule keeps from some callers."""

from __future__ import annotations

from mcpkit import Server

server = Server("demo", "1.0.0")
server.extensions["io.modelcontextprotocol/ui"] = {}

VIEW = "ui://demo/panel.html"


@server.tool(meta={"ui": {"resourceUri": VIEW}})
def panel() -> str:
    """Open the panel."""
    return "panel"


@server.tool
def secret_admin() -> str:
    """What only an admin may see."""
    return "the admin secret"


@server.resource(VIEW, mime_type="text/html;profile=mcp-app", listed=False)
def panel_view() -> str:
    return "<html><body>panel</body></html>"


@server.resource("vault://demo/secret", name="secret", mime_type="text/plain")
def vault_secret() -> str:
    return "vault secret"


@server.resource("open://demo/notes", name="notes", mime_type="text/plain")
def open_notes() -> str:
    return "notes"
