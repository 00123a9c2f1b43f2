# ruff: noqa: E501  (the view's HTML is kept readable rather than wrapped)
"""Test server "probe": an MCP App whose view exercises the host side of the protocol.

``show_probe(topic)`` has a view that shows its tool input and result, and has buttons for
``ui/message`` (``#say``), ``ui/update-model-context`` (``#ctx``), ``ui/open-link``
(``#link``) and the custom method ``com.example/probe/echo`` of the server's extension
(``#ext``; ``#ext-other`` calls a method of an extension the server does not declare); ``PROBE_CONNECT`` makes it declare ``connectDomains``.  When the host sends
``ui/resource-teardown`` the view calls the app-only tool ``note("teardown")`` *before* it
answers; ``note`` appends to ``$HOST_TEST_DIR/probe.events``, so a test can see that the
teardown reached a living view.  With ``PROBE_GATE`` set, the server reads nothing (the host
sees it connecting) until that file exists: a server that comes up when the test says.
With ``PROBE_VIEW_ERROR`` set, reading the view fails with that message (a JSON-RPC error);
with ``PROBE_VIEW_HANG``, it never answers.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio

from mcpkit import Server
from mcpkit.transports.stdio import run_stdio
from mcpkit.types.errors import INTERNAL_ERROR, McpError

server = Server("probe", "1.0.0")
server.extensions["io.modelcontextprotocol/ui"] = {}
server.extension("com.example/probe", {})
VIEW = "ui://probe/view.html"


@server.method("com.example/probe/echo")
def echo(text: str) -> dict[str, str]:
    """A custom method of the server's ``com.example/probe`` extension (views call it)."""
    return {"echo": text}


@server.tool(meta={"ui": {"resourceUri": VIEW}})
def show_probe(topic: str) -> str:
    """Show a probe view about ``topic``."""
    return f"probe ready: {topic}"


@server.tool(meta={"ui": {"resourceUri": VIEW}})
async def wait_probe(topic: str, steps: int = 2000) -> str:
    """Show a probe view about ``topic`` while counting slowly (for cancelling)."""
    for _ in range(steps):
        await anyio.sleep(0.05)
    return f"probe waited: {topic}"


@server.tool(meta={"ui": {"visibility": ["app"]}})
def note(event: str) -> str:
    """Record an event of the view (app only)."""
    with (Path(os.environ["HOST_TEST_DIR"]) / "probe.events").open("a") as out:
        out.write(event + "\n")
    return "noted"


HTML = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<div id="input">waiting</div><div id="result"></div><div id="context"></div><div id="theme"></div><div id="caps"></div><div id="events"></div>
<button id="say">Ask the model</button> <button id="ctx">Set context</button>
<button id="full">Full screen</button> <button id="log">Log</button> <button id="link">Open link</button> <button id="ext">Extension</button> <button id="ext-other">Other extension</button> <span id="status"></span><div id="mode"></div>
<script>
let nextId = 1, topic = ""; const pending = {};
const send = (msg) => window.parent.postMessage(Object.assign({jsonrpc: "2.0"}, msg), "*");
function request(method, params) {
  const id = nextId++; send({id, method, params});
  return new Promise((resolve, reject) => { pending[id] = {resolve, reject}; });
}
const status = (text) => { document.getElementById("status").textContent = text; };
window.addEventListener("message", async (ev) => {
  const msg = ev.data || {};
  if (msg.id !== undefined && !msg.method && pending[msg.id]) {
    const p = pending[msg.id]; delete pending[msg.id];
    msg.error ? p.reject(Object.assign(new Error(msg.error.message), {code: msg.error.code})) : p.resolve(msg.result); return;
  }
  const seen = {"ui/notifications/tool-input-partial": "partial", "ui/notifications/tool-input": "input",
                "ui/notifications/tool-result": "result", "ui/notifications/tool-cancelled": "cancelled"}[msg.method];
  if (seen) document.getElementById("events").textContent += (document.getElementById("events").textContent ? "," : "") + seen;
  if (msg.method === "ui/notifications/tool-input") { topic = msg.params.arguments.topic; document.getElementById("input").textContent = "topic: " + topic; }
  if (msg.method === "ui/notifications/tool-result") document.getElementById("result").textContent = msg.params.content[0].text;
  if (msg.method === "ui/notifications/tool-cancelled") document.getElementById("result").textContent = "cancelled: " + msg.params.reason;
  if (msg.method === "ui/notifications/host-context-changed" && msg.params.theme) document.getElementById("theme").textContent = "theme: " + msg.params.theme;
  if (msg.method === "ui/notifications/host-context-changed" && msg.params.displayMode) document.getElementById("mode").textContent = "mode: " + msg.params.displayMode + " " + JSON.stringify(msg.params.containerDimensions);
  if (msg.method === "ui/resource-teardown") {
    await request("tools/call", {name: "note", arguments: {event: "teardown"}});
    send({id: msg.id, result: {}});
  }
});
document.getElementById("say").addEventListener("click", async () => {
  try { await request("ui/message", {role: "user", content: {type: "text", text: "Tell me more about " + topic}}); status("message sent"); }
  catch (err) { status("refused: " + err.message); }
});
document.getElementById("ctx").addEventListener("click", async () => {
  await request("ui/update-model-context", {content: [{type: "text", text: "The user picked blue."}]});
  status("context set");
});
document.getElementById("full").addEventListener("click", async () => {
  const answer = await request("ui/request-display-mode", {mode: "fullscreen"});
  status("display mode " + answer.mode);
});
document.getElementById("link").addEventListener("click", async () => {
  try { await request("ui/open-link", {url: "http://127.0.0.1:9/probe-link?topic=" + topic}); status("link opened"); }
  catch (err) { status("refused: " + err.message); }
});
document.getElementById("ext").addEventListener("click", async () => {
  try { const r = await request("com.example/probe/echo", {text: "echo " + topic}); status("ext: " + r.echo); }
  catch (err) { status("refused: " + err.message + " code " + err.code); }
});
document.getElementById("ext-other").addEventListener("click", async () => {
  try { await request("com.example/elsewhere/echo", {text: topic}); status("ext-other answered"); }
  catch (err) { status("refused: " + err.message + " code " + err.code); }
});
document.getElementById("log").addEventListener("click", () => {
  send({method: "notifications/message", params: {level: "warning", logger: "probe-view", data: "probe says hi"}});
  status("logged");
});
request("ui/initialize", {protocolVersion: "2026-01-26", appInfo: {name: "probe", version: "1"},
                          appCapabilities: {availableDisplayModes: ["inline", "fullscreen"]}})
  .then((init) => { document.getElementById("context").textContent = JSON.stringify(init.hostContext);
                    document.getElementById("caps").textContent = JSON.stringify(init.hostCapabilities);
                    send({method: "ui/notifications/initialized", params: {}}); });
</script></body></html>"""


#: ``PROBE_CONNECT`` (env): origins the view declares in ``connectDomains``, comma-separated.
CONNECT = [o for o in os.environ.get("PROBE_CONNECT", "").split(",") if o]


@server.resource(
    VIEW,
    mime_type="text/html;profile=mcp-app",
    listed=False,
    meta={"ui": {"csp": {"connectDomains": CONNECT}}} if CONNECT else None,
)
async def view() -> str:
    failure = os.environ.get("PROBE_VIEW_ERROR")
    if failure:
        raise McpError(INTERNAL_ERROR, failure)
    if os.environ.get("PROBE_VIEW_HANG"):
        await anyio.sleep_forever()
    return HTML


@server.resource("ui://probe/plain.txt", mime_type="text/plain", listed=False)
def plain() -> str:
    """A ui:// resource that is not an App view (plain text)."""
    return "not a view"


def wait_for_gate() -> None:
    """Until the file named by ``PROBE_GATE`` exists (at once without it)."""
    gate = os.environ.get("PROBE_GATE")
    while gate and not Path(gate).exists():
        time.sleep(0.05)


if __name__ == "__main__":
    wait_for_gate()
    run_stdio(server)
