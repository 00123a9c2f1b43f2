"""Who may run which tool: permissions, consent, and an audit trail.

Rules, in the order they are applied to one tool call:

1. A per-tool permission (``server__tool``, or the tool name in that server's config) wins;
   then the server's; then the host-wide default (``ask`` unless configured).  At each
   level a person's choice (the page's settings, :meth:`Policy.choose_tool` and
   :meth:`Policy.choose_server`) overrides the config file's; a tool chosen "as its
   server" drops the tool's own rule, the config file's included.
2. ``deny`` refuses before anything is sent: the server never sees the call.
3. ``ask`` runs only after the consent callback approves *this* call.  An approval may be
   remembered, but only for the exact tool definition approved: if the server changes the
   tool's description or schema later (a "rug pull"), the person is asked again.
4. Tool annotations (``readOnlyHint``, ``destructiveHint``...) come from the server, which is
   not trusted: they are shown to the person and recorded, never used to skip a question.

Every decision and every outcome lands in the :class:`AuditTrail`: what ran, with which
arguments, approved by whom (policy, person, remembered approval).
"""

from __future__ import annotations

import enum
import hashlib
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "AuditEntry",
    "AuditTrail",
    "ConsentCallback",
    "ConsentDecision",
    "ConsentRequest",
    "Permission",
    "Policy",
    "tool_fingerprint",
]


class Permission(enum.StrEnum):
    """What happens when a tool is called: ``allow`` runs it, ``ask`` waits for a person's yes,
    ``deny`` never reaches the server."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


_ids = itertools.count(1)


def tool_fingerprint(tool: Mapping[str, Any]) -> str:
    """A hash of what the person saw when approving: name, description, schema, annotations."""
    seen = {k: tool.get(k) for k in ("name", "title", "description", "inputSchema", "annotations")}
    raw = json.dumps(seen, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class ConsentRequest:
    """A tool call waiting for a person's yes or no."""

    server: str
    tool: str
    qualified_name: str
    arguments: dict[str, Any]
    #: Who wants it run: ``model``, ``app`` (an MCP App view) or ``user``.
    origin: str
    description: str = ""
    #: The server's own claims about the tool; untrusted, for display only.
    annotations: dict[str, Any] = field(default_factory=dict)
    #: Warnings about the tool definition (hidden characters, instruction-like text...).
    flags: tuple[str, ...] = ()
    id: str = field(default_factory=lambda: f"consent-{next(_ids)}")


@dataclass(frozen=True)
class ConsentDecision:
    """A person's answer to a :class:`ConsentRequest`."""

    approved: bool
    #: Approve this tool (this exact definition) for the rest of the run.
    remember: bool = False
    reason: str = ""


ConsentCallback = Callable[
    [ConsentRequest], Awaitable[ConsentDecision | bool] | ConsentDecision | bool
]
"""Asks a person about a :class:`ConsentRequest`; returns a decision, or a plain bool."""


class Policy:
    """Permissions by server and tool, plus approvals remembered during this run."""

    def __init__(
        self,
        default: Permission = Permission.ASK,
        *,
        servers: Mapping[str, Permission] | None = None,
        tools: Mapping[str, Permission] | None = None,
    ) -> None:
        self.default = Permission(default)
        self.servers: dict[str, Permission] = dict(servers or {})
        #: Keyed by namespaced name ``server__tool``.
        self.tools: dict[str, Permission] = dict(tools or {})
        self._remembered: set[tuple[str, str, str]] = set()
        #: A person's choices, over the config's: by server, and by tool (None: the
        #: tool follows its server).
        self.chosen_servers: dict[str, Permission] = {}
        self.chosen_tools: dict[str, Permission | None] = {}

    def set_server(self, server: str, permission: Permission) -> None:
        """Set the permission for every tool of ``server`` that has none of its own."""
        self.servers[server] = Permission(permission)

    def set_tool(self, qualified_name: str, permission: Permission) -> None:
        """Set the permission of one tool, by its namespaced name (``server__tool``)."""
        self.tools[qualified_name] = Permission(permission)

    def choose_server(self, server: str, permission: Permission) -> None:
        """A person's permission for ``server``'s tools, over the config file's."""
        self.chosen_servers[server] = Permission(permission)

    def choose_tool(self, qualified_name: str, permission: Permission | None) -> None:
        """A person's permission for one tool, over the config file's; None: the tool
        follows its server's permission (its own rule in the config is set aside)."""
        self.chosen_tools[qualified_name] = None if permission is None else Permission(permission)

    def permission(self, server: str, qualified_name: str) -> Permission:
        """The permission that applies to a tool: its own, else its server's, else the
        default (a person's choice first at each level)."""
        if qualified_name in self.chosen_tools:
            chosen = self.chosen_tools[qualified_name]
            if chosen is not None:
                return chosen
        elif qualified_name in self.tools:
            return self.tools[qualified_name]
        if server in self.chosen_servers:
            return self.chosen_servers[server]
        return self.servers.get(server, self.default)

    def server_permission(self, server: str) -> Permission:
        """The permission ``server``'s tools get when they have none of their own."""
        return self.chosen_servers.get(server, self.servers.get(server, self.default))

    def remember(self, server: str, tool: str, fingerprint: str) -> None:
        """Approve this exact tool definition (by fingerprint) for the rest of the run."""
        self._remembered.add((server, tool, fingerprint))

    def remembered(self, server: str, tool: str, fingerprint: str) -> bool:
        """True when this exact tool definition was approved earlier in the run."""
        return (server, tool, fingerprint) in self._remembered

    def forget_server(self, server: str) -> None:
        """Drop every approval remembered for ``server`` (it restarted or changed)."""
        self._remembered = {r for r in self._remembered if r[0] != server}


@dataclass(frozen=True)
class AuditEntry:
    """One line of the audit trail: what ran (a tool call, an answered input request, a
    server launch), on which server, with whose approval and with what outcome."""

    time: float
    kind: str  # tool | elicitation | sampling | roots | server | permission
    server: str
    name: str
    origin: str
    #: allowed | denied | approved | declined | remembered | answered | failed
    decision: str
    #: Who decided: policy, user, remembered.
    by: str
    arguments: dict[str, Any] | None = None
    outcome: str = ""  # ok | tool-error | error: ... (filled for calls that ran)
    duration_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as one JSON object, without the fields that are None."""
        return {k: v for k, v in asdict(self).items() if v is not None}


class AuditTrail:
    """What ran with whose approval: in memory, and optionally appended to a JSONL file."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        keep: int = 10_000,
        on_entry: Callable[[AuditEntry], None] | None = None,
    ) -> None:
        self.path = Path(path) if path else None
        self.keep = keep
        self.entries: list[AuditEntry] = []
        self.on_entry = on_entry

    def record(
        self,
        kind: str,
        server: str,
        name: str,
        *,
        origin: str,
        decision: str,
        by: str,
        arguments: dict[str, Any] | None = None,
        outcome: str = "",
        duration_ms: float | None = None,
    ) -> AuditEntry:
        """Add an entry (arguments kept whole unless huge), append it to the JSONL file if there
        is one, and pass it to ``on_entry``."""
        entry = AuditEntry(
            time.time(),
            kind,
            server,
            name,
            origin,
            decision,
            by,
            _bounded(arguments),
            outcome,
            duration_ms,
        )
        self.entries.append(entry)
        if len(self.entries) > self.keep:
            del self.entries[: len(self.entries) - self.keep]
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(entry.to_json(), default=str) + "\n")
        if self.on_entry is not None:
            self.on_entry(entry)
        return entry

    def for_tool(self, qualified_or_name: str) -> list[AuditEntry]:
        """The entries of tool calls to ``qualified_or_name``, oldest first."""
        return [e for e in self.entries if e.kind == "tool" and e.name == qualified_or_name]


def _bounded(arguments: dict[str, Any] | None, limit: int = 4000) -> dict[str, Any] | None:
    """Arguments as recorded: kept whole unless huge (an audit log must not balloon)."""
    if arguments is None:
        return None
    text = json.dumps(arguments, default=str)
    if len(text) <= limit:
        return arguments
    return {"_truncated": text[:limit]}
