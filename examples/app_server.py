# ruff: noqa: E501  (the view's HTML is kept readable rather than wrapped)
"""An MCP App: a dice roller whose result is shown by its own little web view.

The tool ``roll_dice`` has a view: ``@server.tool(app=App(...))`` writes the
``ui://dice/roller.html`` resource (``text/html;profile=mcp-app``), the tool's
``_meta.ui.resourceUri`` and the ``io.modelcontextprotocol/ui`` extension entry.  A host that renders
MCP Apps (``mcpkit host --web``) shows it in a sandboxed iframe on its sandbox origin, in
the chat when the model rolled, in the Tools tab when a person did.  The view:

* "Roll again" calls the tool back through the host, which applies its permission policy;
* tells the model what it shows (``ui/update-model-context``, sent with the next turn);
* "Ask the model" adds a message to the conversation (``ui/message``; the host asks first);
* answers ``ui/resource-teardown`` before the host removes it.

    mcpkit serve examples/app_server.py --http --port 8001   # then connect it in the page
    mcpkit host --web --config examples/host.json
"""

from __future__ import annotations

import random
from typing import TypedDict

from mcpkit import Server
from mcpkit.server import App

server = Server("dice", "1.0.0", instructions="Roll dice; the result comes with a view.")

VIEW = "ui://dice/roller.html"
_history: list[int] = []


class Roll(TypedDict):
    sides: int
    rolls: list[int]
    total: int


# The view: plain HTML and script, no network (the default CSP allows none).  It speaks the
# MCP Apps JSON-RPC over postMessage: ui/initialize, then it is sent the tool input and
# result; it may call tools/call, which the host routes through its policy.
HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>Dice</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 12px; color: #1d2330; }
 .dice { display: flex; gap: 8px; margin: 8px 0; }
 .die { width: 44px; height: 44px; border-radius: 8px; background: #2f6feb; color: #fff;
        display: flex; align-items: center; justify-content: center; font-size: 22px; font-weight: 700; }
 #total { font-size: 18px; } button { font: inherit; padding: 4px 10px; }
 #status { color: #667085; font-size: 12px; }
</style></head>
<body>
<div id="title">Waiting for the roll...</div>
<div class="dice" id="dice"></div>
<div id="total"></div>
<p><button id="again">Roll again</button> <button id="ask">Ask the model</button> <span id="status"></span></p>
<script>
let nextId = 1; const pending = {}; let lastArgs = {}; let lastTotal = null;
function send(msg) { window.parent.postMessage(Object.assign({jsonrpc: "2.0"}, msg), "*"); }
function request(method, params) {
  const id = nextId++; send({id, method, params});
  return new Promise((resolve, reject) => { pending[id] = {resolve, reject}; });
}
function show(result) {
  const roll = result && result.structuredContent;
  if (!roll) { document.getElementById("title").textContent = "No roll in the result"; return; }
  document.getElementById("title").textContent = roll.rolls.length + " dice with " + roll.sides + " sides";
  const box = document.getElementById("dice"); box.replaceChildren();
  for (const r of roll.rolls) { const d = document.createElement("div"); d.className = "die"; d.textContent = r; box.append(d); }
  document.getElementById("total").textContent = "Total: " + roll.total;
  lastTotal = roll.total;
  send({method: "ui/notifications/size-changed", params: {height: document.body.scrollHeight}});
  request("ui/update-model-context", {content: [{type: "text", text: "The dice view shows " + roll.rolls.join(", ") + " (total " + roll.total + ")."}]}).catch(() => {});
}
window.addEventListener("message", (ev) => {
  const msg = ev.data || {};
  if (msg.method === "ui/resource-teardown") { send({id: msg.id, result: {}}); return; }  // nothing to save
  if (msg.id !== undefined && pending[msg.id]) {
    const p = pending[msg.id]; delete pending[msg.id];
    msg.error ? p.reject(new Error(msg.error.message)) : p.resolve(msg.result); return;
  }
  if (msg.method === "ui/notifications/tool-input") lastArgs = (msg.params || {}).arguments || {};
  if (msg.method === "ui/notifications/tool-result") show(msg.params);
});
document.getElementById("again").addEventListener("click", async () => {
  const status = document.getElementById("status"); status.textContent = "rolling...";
  try {
    show(await request("tools/call", {name: "roll_dice", arguments: lastArgs}));
    const history = await request("tools/call", {name: "roll_history", arguments: {}});
    status.textContent = "rolled through the host; totals so far: " + history.structuredContent.totals.join(", ");
  } catch (err) { status.textContent = "refused: " + err.message; }
});
document.getElementById("ask").addEventListener("click", async () => {
  const status = document.getElementById("status");
  try { await request("ui/message", {role: "user", content: {type: "text", text: "I rolled a total of " + lastTotal + ". Is that a good roll?"}});
        status.textContent = "asked the model"; }
  catch (err) { status.textContent = "refused: " + err.message; }
});
request("ui/initialize", {protocolVersion: "2026-01-26", appInfo: {name: "dice-view", version: "1.0.0"},
                          appCapabilities: {}})
  .then(() => send({method: "ui/notifications/initialized", params: {}}));
</script>
</body></html>
"""


#: The view: no network (no ``csp``: the host's restrictive default), drawn with a border.
ROLLER = App(uri=VIEW, html=HTML, prefers_border=True)


@server.tool(app=ROLLER)
def roll_dice(count: int = 2, sides: int = 6) -> Roll:
    """Roll ``count`` dice with ``sides`` sides each."""
    count, sides = max(1, min(count, 10)), max(2, min(sides, 100))
    rolls = [random.randint(1, sides) for _ in range(count)]
    _history.append(sum(rolls))
    return {"sides": sides, "rolls": rolls, "total": sum(rolls)}


@server.tool(meta={"ui": {"visibility": ["app"]}})
def roll_history() -> dict[str, list[int]]:
    """Totals rolled so far (for the view only; the model never sees this tool)."""
    return {"totals": list(_history)}


if __name__ == "__main__":
    from mcpkit.transports.stdio import run_stdio

    run_stdio(server)
