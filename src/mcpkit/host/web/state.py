"""The state behind the local web page (:mod:`.app` serves it): the host, the person's
questions, the chat with its model, and the conversation the page shows, kept in the
conversation store when there is one."""

from __future__ import annotations

import functools
import logging
import secrets
import sqlite3
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import anyio

from ..conversations import ConversationStore
from ..host import Host
from ..loop import Conversation, sampler_for
from ..models.base import Model
from ..settings import ModelSettings, PermissionSettings
from .prompts import WebInteraction
from .sandbox import Sandbox

__all__ = ["INTERRUPTED", "NEW_TITLE", "WebHost", "render_markdown"]

log = logging.getLogger("mcpkit.host.web")

NEW_TITLE = "New conversation"
#: The result kept for a call that a previous run of the host left unfinished.
INTERRUPTED = "Interrupted: the host stopped before this call ended."


@dataclass(eq=False)
class WebHost:
    """The state behind the page: the host, its web interaction, the chat (with ``model``,
    when there is one).  ``token`` guards the page's API (default: a random one)."""

    host: Host
    interaction: WebInteraction
    _: KW_ONLY
    model: Model | None = None
    system: str | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    #: Where conversations are kept (None: nothing is kept beyond this run's page).
    store: ConversationStore | None = None
    #: The model chosen on the page, kept for the next start (None: no settings panel).
    settings: ModelSettings | None = None
    #: Permissions chosen on the page, kept for the next start (None: not kept).
    permissions: PermissionSettings | None = None
    allowed_hosts: set[str] = field(default_factory=set, init=False)
    sandbox: Sandbox = field(default_factory=Sandbox, init=False)

    def __post_init__(self) -> None:
        self.chat = (
            Conversation(self.host, self.model, system=self.system, on_event=self._chat_event)
            if self.model is not None
            else None
        )
        #: Held while the chat or the conversation shown changes (one turn at a time).
        self.chat_lock = anyio.Lock()
        #: The conversation the page shows and the model continues.
        self.current: str | None = None
        if self.store is not None:
            self.store.close_interrupted(INTERRUPTED)
            kept = self.store.summaries()
            self.switch(kept[0]["id"] if kept else self.store.create()["id"])
            self.host.listeners.append(self._host_event)

    def _chat_event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "assistant":  # the page draws the model's text as sanitized Markdown
            data = {**data, "html": render_markdown(str(data.get("text") or ""))}
        self.host.emit("chat", {"kind": kind, **data})

    #: Chat events kept in the transcript (the streamed fragments are not: the final
    #: ``assistant`` event holds the whole text).
    KEPT = frozenset({"assistant", "tool_call", "tool_result", "app_message", "error", "user"})

    def _host_event(self, kind: str, data: dict[str, Any]) -> None:
        """Keep the chat's events, and the consent decisions of the model's calls."""
        if kind == "chat" and data.get("kind") in self.KEPT:
            self.keep(data)
        elif kind == "authorized" and str(data.get("callId") or "").startswith("chat:"):
            self.keep({"kind": "authorized", **data})

    def keep(self, event: dict[str, Any]) -> None:
        """Append ``event`` to the current conversation's transcript."""
        if self.store is not None and self.current is not None:
            try:
                self.store.append(self.current, event)
            except sqlite3.Error as exc:  # the chat goes on; only keeping it failed
                log.warning("could not keep a chat event: %s", exc)

    def save(self) -> None:
        """Keep the model's messages of the current conversation."""
        if self.store is not None and self.current is not None and self.chat is not None:
            try:
                self.store.save_messages(self.current, self.chat.messages)
            except sqlite3.Error as exc:
                log.warning("could not keep the conversation: %s", exc)

    def use_model(self, model: Model) -> None:
        """Chat with ``model`` from now on (chosen on the page); the conversation goes on."""
        messages = list(self.chat.messages) if self.chat is not None else []
        if self.chat is None and self.store is not None and self.current is not None:
            messages = self.store.messages(self.current)
        self.model = model
        self.chat = Conversation(self.host, model, system=self.system, on_event=self._chat_event)
        self.chat.messages[:] = messages
        self.host.sampler = sampler_for(model)

    def switch(self, conversation: str) -> None:
        """Show and continue ``conversation`` (its model messages are loaded)."""
        if self.store is None or self.store.get(conversation) is None:
            raise ValueError(f"no conversation {conversation!r}")
        self.current = conversation
        if self.chat is not None:
            self.chat.messages[:] = self.store.messages(conversation)

    def bind(self, port: int, sandbox_port: int) -> None:
        self.allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.sandbox.bind(sandbox_port, tuple(f"http://{h}" for h in sorted(self.allowed_hosts)))

    def page_csp(self) -> str:
        """The page's own policy: itself, ``data:`` images from tool results, and frames
        from the sandbox proxy only."""
        return "; ".join(
            [
                "default-src 'self'",
                "script-src 'self' 'unsafe-inline'",
                "style-src 'self' 'unsafe-inline'",
                "img-src 'self' data:",
                f"frame-src {self.sandbox.origin}/proxy",
                "frame-ancestors 'none'",
                "object-src 'none'",
                "base-uri 'none'",
                "form-action 'none'",
            ]
        )

    def url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}/?token={self.token}"


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # CommonMark with raw HTML off: a tag in the text is shown as text, never parsed;
    # markdown-it refuses javascript:, vbscript:, file: and non-image data: links.
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def render_markdown(text: str) -> str:
    """The model's text as HTML safe to insert in the page (see :func:`_markdown`)."""
    html: str = _markdown().render(text)
    return html
