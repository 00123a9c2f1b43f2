"""MCP Apps for server authors: ``@server.tool(app=App(...))`` writes the ``ui://``
resource (``text/html;profile=mcp-app``, unlisted, its ``_meta.ui``), the tool's
``_meta.ui`` and the extension entry; checked in memory on both eras, read back the way
the host reads them (``mcpkit.host.apps``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.host.apps import prepare_app, tool_ui_uri, visible_to_model
from mcpkit.server import App

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]
HTML = "<!doctype html><html><body>view</body></html>"


def make_server(view_file: Path) -> Server:
    server = Server("apps")
    chart = App(
        uri="ui://apps/chart.html",
        html=HTML,
        csp={"connectDomains": ["https://api.example.com"]},
        permissions=["clipboardWrite"],
        domain="chart.example.com",
        prefers_border=False,
    )

    @server.tool(app=chart)
    def draw() -> str:
        return "drawn"

    @server.tool(app=chart)  # a second tool on the same view: one resource
    def redraw() -> str:
        return "redrawn"

    @server.tool(app=App(uri="ui://apps/panel.html", path=view_file, visibility=["app"]))
    def panel_only() -> str:
        return "panel"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_tool_app_writes_resource_meta_and_extension(era: str, tmp_path: Path) -> None:
    view_file = tmp_path / "panel.html"
    view_file.write_text("<html>panel v1</html>")
    server = make_server(view_file)
    async with Client(server, era=era) as client:  # type: ignore[arg-type]
        caps = client.server_info.capabilities
        tools = {t["name"]: t for t in await client.list_tools()}
        listed = await client.list_resources()
        chart = await client.read_resource("ui://apps/chart.html")
        view_file.write_text("<html>panel v2</html>")
        panel = await client.read_resource("ui://apps/panel.html")
    assert caps.get("extensions") == (
        {"io.modelcontextprotocol/ui": {}} if era == "modern" else None
    )
    assert tools["draw"]["_meta"] == {"ui": {"resourceUri": "ui://apps/chart.html"}}
    assert tool_ui_uri(tools["redraw"]) == "ui://apps/chart.html"
    assert tools["panel_only"]["_meta"]["ui"] == {
        "resourceUri": "ui://apps/panel.html",
        "visibility": ["app"],
    }
    assert not visible_to_model(tools["panel_only"]) and visible_to_model(tools["draw"])
    assert listed == []  # views are not listed resources
    content = chart["contents"][0]
    assert content["mimeType"] == "text/html;profile=mcp-app" and content["text"] == HTML
    assert content["_meta"] == {
        "ui": {
            "csp": {"connectDomains": ["https://api.example.com"]},
            "permissions": {"clipboardWrite": {}},
            "domain": "chart.example.com",
            "prefersBorder": False,
        }
    }
    document = prepare_app("ui://apps/chart.html", chart)
    assert "https://api.example.com" in document.csp and document.domain == "chart.example.com"
    assert document.html == HTML and document.prefers_border is False
    assert "clipboard-write" in document.allow
    assert panel["contents"][0]["text"] == "<html>panel v2</html>"  # the file, read now


def test_app_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must start with 'ui://'"):
        App(uri="https://x/view.html", html=HTML)
    with pytest.raises(ValueError, match="exactly one of html"):
        App(uri="ui://a/v.html")
    with pytest.raises(ValueError, match="exactly one of html"):
        App(uri="ui://a/v.html", html=HTML, path=tmp_path / "v.html")
    with pytest.raises(ValueError, match="is not a file"):
        App(uri="ui://a/v.html", path=tmp_path / "missing.html")
    with pytest.raises(ValueError, match="unknown key 'scriptDomains'"):
        App(uri="ui://a/v.html", html=HTML, csp={"scriptDomains": ["https://x"]})
    with pytest.raises(ValueError, match="unknown 'usb'"):
        App(uri="ui://a/v.html", html=HTML, permissions=["usb"])
    with pytest.raises(ValueError, match="unknown 'user'"):
        App(uri="ui://a/v.html", html=HTML, visibility=["user"])
    server = Server("clash")
    server.tool(app=App(uri="ui://a/v.html", html=HTML))(lambda: "a")
    with pytest.raises(ValueError, match="another App is already registered"):
        server.tool(name="b", app=App(uri="ui://a/v.html", html="<p>other</p>"))(lambda: "b")
    with pytest.raises(ValueError, match="differs from the app's uri"):
        server.tool(
            name="c",
            app=App(uri="ui://a/v.html", html=HTML),
            meta={"ui": {"resourceUri": "ui://other/x.html"}},
        )(lambda: "c")
