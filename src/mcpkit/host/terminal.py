"""``mcpkit host`` in a terminal: the same host and model loop, for people who live there.

Plain lines in, readable lines out; anything else is a ``/command`` (``/help`` lists them).
Consent, elicitation and sampling questions are asked inline and default to "no": pressing
Enter never approves anything.  Server-provided text is printed with control characters
escaped, so a tool description cannot move the cursor or recolour the prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel

from ..auth.client import TokenStore
from .config import HostConfig
from .host import Host, Interaction, ToolDenied
from .loop import Conversation, result_blocks, sampler_for
from .models.base import Model
from .policy import ConsentDecision, ConsentRequest
from .trust import TrustStore

__all__ = ["TerminalInteraction", "run_terminal"]

HELP = """commands:
  /servers                      servers and their state
  /tools                        tools, namespaced as server__tool
  /call NAME {json arguments}   call a tool yourself
  /resources   /read SERVER URI   /attach SERVER URI (into your next message)
  /prompts     /prompt SERVER NAME [key=value ...] (adds it to the chat)
  /restart SERVER   /logout SERVER (forget its OAuth tokens)   /audit   /help   /quit
anything else is sent to the model (when one is configured)"""


def clean(text: object) -> str:
    """Untrusted text, safe to print: control characters (ANSI escapes...) made visible."""
    return "".join(
        ch if ch in "\n\t" or ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text)
    )


class _StdinLines:
    """Lines typed by the person: ``input()`` when stdin and stdout are both a terminal
    (line editing; it reads through the C library then, not ``sys.stdin``), else lines
    read from file descriptor 0 with ``os.read``.  Neither holds ``sys.stdin``'s lock, so a
    read left waiting in its thread never stops the interpreter from exiting."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self._pending = b""

    def __call__(self, prompt: str) -> str:
        if sys.stdin.isatty() and sys.stdout.isatty():
            return input(prompt)
        self.out.write(prompt)
        self.out.flush()
        while b"\n" not in self._pending:
            chunk = os.read(0, 65536)
            if not chunk:
                rest, self._pending = self._pending, b""
                if rest:
                    return rest.decode(errors="replace")
                raise EOFError
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace")


@dataclass
class _Line:
    """What one read of stdin gave: a line, None at end of input, or an error."""

    text: str | None = None
    error: BaseException | None = None


class TerminalInteraction(Interaction):
    def __init__(self, read: Callable[[str], str], out: TextIO) -> None:
        self._read = read
        self.out = out
        self._lock = anyio.Lock()  # one question at a time

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    async def ask(self, prompt: str) -> str:
        """A line from the person; "" at end of input (which answers every question no)."""
        line = await self.read_line(prompt)
        return "" if line is None else line

    async def read_line(self, prompt: str) -> str | None:
        """A line from the person (None at end of input).  The blocking read runs in a
        daemon thread of its own: a cancelled read (Ctrl-C, the host stopping) returns at
        once and the process can exit, without a line ever arriving on stdin."""
        done, got = anyio.Event(), _Line()
        token = anyio.lowlevel.current_token()

        def read() -> None:
            try:
                got.text = self._read(prompt)
            except EOFError:
                got.text = None
            except BaseException as exc:  # handed to the waiting task
                got.error = exc
            with contextlib.suppress(RuntimeError):  # the event loop is already gone
                anyio.from_thread.run_sync(done.set, token=token)

        threading.Thread(target=read, name="mcpkit-host-stdin", daemon=True).start()
        await done.wait()
        if got.error is not None:
            raise got.error
        return None if got.text is None else got.text.strip()

    async def consent(self, request: ConsentRequest) -> ConsentDecision:
        who = {"model": "The model", "app": "An app", "user": "You"}.get(
            request.origin, request.origin
        )
        async with self._lock:
            self.say(f"\n? {who} wants to run {clean(request.tool)} on {clean(request.server)}")
            self.say(f"  arguments: {clean(json.dumps(request.arguments))}")
            if request.annotations:
                self.say(f"  the server claims (unverified): {clean(request.annotations)}")
            for flag in request.flags:
                self.say(f"  warning: {clean(flag)}")
            answer = (await self.ask("  allow? [y]es once / [a]lways / [N]o: ")).lower()
        if answer in ("y", "yes"):
            return ConsentDecision(True)
        if answer in ("a", "always"):
            return ConsentDecision(True, remember=True)
        return ConsentDecision(False, reason="the user said no")

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        schema = params.get("requestedSchema") or {}
        required = set(schema.get("required") or [])
        async with self._lock:
            self.say(f"\n? {clean(server)} asks: {clean(params.get('message', ''))}")
            self.say("  (answer each field; '!decline' declines, '!cancel' cancels)")
            content: dict[str, Any] = {}
            for name, prop in (schema.get("properties") or {}).items():
                kind = prop.get("type", "string")
                hint = f" {prop['enum']}" if prop.get("enum") else ""
                raw = await self.ask(
                    f"  {clean(prop.get('title') or name)} ({kind}{hint})"
                    f"{' *' if name in required else ''}: "
                )
                if raw in ("!decline", "!cancel"):
                    return {"action": raw[1:]}
                if raw == "" and name not in required:
                    continue
                content[name] = _coerce(raw, kind)
        return {"action": "accept", "content": content}

    async def elicit_url(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            self.say(f"\n? {clean(server)} asks you to open: {clean(params.get('url'))}")
            self.say(f"  {clean(params.get('message', ''))}")
            answer = (await self.ask("  open it yourself, then: [a]ccept / [N]o: ")).lower()
        return {"action": "accept" if answer in ("a", "accept", "y") else "decline"}

    def login_url(self, server: str, url: str) -> None:
        self.say(
            f"! {server} needs you to log in (OAuth): open this address in a browser:\n"
            f"    {clean(url)}"
        )

    async def approve_sampling(self, server: str, params: dict[str, Any]) -> bool:
        async with self._lock:
            self.say(f"\n? {clean(server)} wants to use the model with these messages:")
            for message in params.get("messages") or []:
                self.say(f"  {clean(message.get('role'))}: {clean(message.get('content'))}")
            return (await self.ask("  allow? [y/N]: ")).lower() in ("y", "yes")


def _coerce(raw: str, kind: str) -> Any:
    if kind == "integer":
        return int(raw)
    if kind == "number":
        return float(raw)
    if kind == "boolean":
        return raw.lower() in ("y", "yes", "true", "1")
    return raw


def _show_result(ui: TerminalInteraction, result: dict[str, Any]) -> None:
    blocks, is_error = result_blocks(result)
    for block in blocks:
        if block["type"] == "text":
            ui.say(("error: " if is_error else "") + clean(block["text"]))
        else:
            ui.say(f"[{block['type']} {block.get('mimeType', '')}]")


async def _command(
    line: str, host: Host, chat: Conversation | None, ui: TerminalInteraction
) -> bool:
    """Run one /command; False means quit."""
    head, _, rest = line[1:].partition(" ")
    args = shlex.split(rest) if head not in ("call",) else []
    if head in ("quit", "exit", "q"):
        return False
    if head == "help":
        ui.say(HELP)
    elif head == "servers":
        statuses = [
            *(host.untrusted_status(n) for n in host.untrusted),
            *(c.status() for c in host.servers.values()),
        ]
        for status in statuses:
            ui.say(
                f"{status['name']:12} {status['state']:10} {clean(status['target'])}"
                + (f"  ({clean(status['error'])})" if status["error"] else "")
            )
    elif head == "tools":
        for tool in await host.list_tools():
            mark = "" if tool.for_model else " (app only)"
            ui.say(f"{tool.qualified_name}{mark}: {clean(tool.description)[:100]}")
    elif head == "call":
        name, _, raw = rest.strip().partition(" ")
        result = await host.call_tool(name, json.loads(raw) if raw.strip() else {}, origin="user")
        _show_result(ui, dict(result))
    elif head == "resources":
        for server, resource in await host.list_resources():
            ui.say(f"{server} {clean(resource['uri'])}  {clean(resource.get('name', ''))}")
    elif head in ("read", "attach") and len(args) == 2:
        if head == "attach" and chat is not None:
            await chat.attach_resource(args[0], args[1])
            ui.say("attached to your next message")
        else:
            read = await host.read_resource(args[0], args[1])
            for item in read.get("contents", []):
                ui.say(clean(item.get("text", f"[binary {item.get('mimeType', '')}]")))
    elif head == "prompts":
        for server, prompt in await host.list_prompts():
            ui.say(f"{server} {clean(prompt['name'])}: {clean(prompt.get('description', ''))}")
    elif head == "prompt" and len(args) >= 2:
        pairs = dict(a.split("=", 1) for a in args[2:] if "=" in a)
        if chat is None:
            got = await host.get_prompt(args[0], args[1], pairs)
            for message in got.get("messages", []):
                ui.say(f"{message['role']}: {clean(message['content'].get('text', ''))}")
        else:
            await chat.use_prompt(args[0], args[1], pairs)
            ui.say("prompt added; press Enter (or type) to send it")
    elif head == "logout" and args:
        host.logout(args[0])
        ui.say(f"{args[0]}: logged out")
    elif head == "restart" and args:
        host.connection(args[0]).restart()
    elif head == "audit":
        for entry in host.audit.entries[-20:]:
            ui.say(
                f"{entry.kind} {entry.name} {entry.decision} by {entry.by} {entry.outcome}".rstrip()
            )
    else:
        ui.say(f"unknown command {line!r}; /help lists them")
    return True


async def _confirm_trust(host: Host, ui: TerminalInteraction) -> None:
    """Ask about each held-back stdio server, showing exactly what would run."""
    for name in list(host.untrusted):
        config = host.untrusted[name]
        env = ", ".join(sorted(config.env)) or "none"
        ui.say(
            f"! {name} wants to run a command on this machine, with your rights:\n"
            f"    {clean(config.describe())}\n    cwd: {clean(config.cwd or '.')}"
            f"   environment variables: {clean(env)}"
        )
        changes = host.trust_changes(name)
        if changes:
            ui.say("  it was trusted before, but this changed:")
            for change in changes:
                ui.say(f"    {clean(change)}")
        answer = await ui.read_line(f"  trust and start {name}? [y/N] ")
        if answer is not None and answer.strip().lower() in ("y", "yes"):
            await host.trust_server(name)
        else:
            ui.say(f"{name}: not started (untrusted)")


async def run_terminal(
    config: HostConfig,
    *,
    model: Model | None = None,
    read: Callable[[str], str] | None = None,
    out: TextIO = sys.stdout,
    trust: TrustStore | None = None,
    token_store: TokenStore | None = None,
) -> None:
    ui = TerminalInteraction(read or _StdinLines(out), out)
    host = Host(
        config,
        interaction=ui,
        sampler=sampler_for(model) if model else None,
        trust=trust,
        token_store=token_store,
    )
    async with host:
        await _confirm_trust(host, ui)
        for conn in host.servers.values():
            ui.say(f"{conn.name}: {conn.state}" + (f" ({clean(conn.error)})" if conn.error else ""))

        def narrate(kind: str, data: dict[str, Any]) -> None:
            if kind == "assistant" and not data["final"]:
                ui.say(f"model> {clean(data['text'])}")
            elif kind == "tool_call":
                ui.say(f"  -> {data['name']} {clean(json.dumps(data['arguments']))}")
            elif kind == "tool_result":
                text = " ".join(b.get("text", "") for b in data["content"] if b["type"] == "text")
                ui.say(f"  {'x' if data['is_error'] else '<-'} {clean(text)[:200]}")

        chat = (
            Conversation(
                host, model, system=config.model.system if config.model else None, on_event=narrate
            )
            if model
            else None
        )
        ui.say(f"model: {model.name}" if model else "no model configured: /help for commands")
        while True:
            line = await ui.read_line("you> ")
            if line is None:
                return
            if line.startswith("/"):
                try:
                    if not await _command(line, host, chat, ui):
                        return
                except ToolDenied as exc:
                    ui.say(f"refused: {exc.reason}")
                except Exception as exc:
                    ui.say(f"error: {clean(exc)}")
                continue
            if not line and (chat is None or not chat.has_pending):
                continue
            if chat is None:
                ui.say("no model is configured; /help lists what you can do")
                continue
            try:
                ui.say(f"model> {clean(await chat.send(line))}")
            except Exception as exc:
                ui.say(f"error: {clean(exc)}")
