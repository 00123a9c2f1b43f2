"""Conversations kept: the page's chats in a SQLite file in the person's data directory.

Each conversation keeps two things:

* its *transcript*: the events the page drew (what the person said, the model's text, each
  tool call with its arguments, consent decision and result, an app's message), in order,
  so a reload (or another day) draws the same page, App views re-initialized with their
  tool input and result;
* the model's *messages* (what the model is sent next turn), so the chat goes on where it
  stopped.

The file is ``$MCPKIT_HOST_DATA/conversations.db`` when that variable is set, else
``conversations.db`` in the per-user data directory (``platformdirs``:
``~/.local/share/mcpkit`` on Linux).  The directory is created 0700 and the database 0600
(its ``-wal``/``-journal`` files get the same mode from the umask set while it is open):
a transcript holds what tools returned.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["ConversationStore", "default_data_dir"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
    messages TEXT NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS events (
    conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (conversation, seq));
"""


def default_data_dir() -> Path:
    """Where the host keeps a person's data (``$MCPKIT_HOST_DATA`` overrides)."""
    explicit = os.environ.get("MCPKIT_HOST_DATA")
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_data_dir("mcpkit", appauthor=False))


def _interrupted(call_id: str, call: dict[str, Any], text: str) -> dict[str, Any]:
    """The ``tool_result`` event of a call its host never finished."""
    event: dict[str, Any] = {
        "kind": "tool_result",
        "id": call_id,
        "name": call.get("name"),
        "is_error": True,
        "interrupted": True,
        "content": [{"type": "text", "text": text}],
    }
    if isinstance(call.get("app"), dict):
        event["app"] = {**call["app"], "arguments": call.get("arguments"), "result": None}
    return event


@contextlib.contextmanager
def _private_umask() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


class ConversationStore:
    """Conversations in one SQLite file (see the module); every method is one short
    transaction, safe to call from the event loop."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_data_dir() / "conversations.db"
        with _private_umask():
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
        os.chmod(self.path, 0o600)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def create(self, title: str = "New conversation") -> dict[str, Any]:
        now = time.time()
        conversation = {"id": uuid.uuid4().hex, "title": title, "created": now, "updated": now}
        with self._db:
            self._db.execute(
                "INSERT INTO conversations (id, title, created, updated) VALUES (?, ?, ?, ?)",
                (conversation["id"], title, now, now),
            )
        return conversation

    def summaries(self) -> list[dict[str, Any]]:
        """Every conversation, the most recently used first."""
        rows = self._db.execute(
            "SELECT c.id, c.title, c.created, c.updated, "
            "(SELECT COUNT(*) FROM events e WHERE e.conversation = c.id) "
            "FROM conversations c ORDER BY c.updated DESC"
        ).fetchall()
        return [
            {"id": i, "title": t, "created": c, "updated": u, "events": n} for i, t, c, u, n in rows
        ]

    def get(self, conversation: str) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT id, title, created, updated FROM conversations WHERE id = ?", (conversation,)
        ).fetchone()
        if row is None:
            return None
        return {"id": row[0], "title": row[1], "created": row[2], "updated": row[3]}

    def rename(self, conversation: str, title: str) -> bool:
        title = " ".join(title.split())[:200]
        if not title:
            raise ValueError("a conversation needs a title")
        with self._db:
            cursor = self._db.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", (title, conversation)
            )
        return cursor.rowcount == 1

    def delete(self, conversation: str) -> bool:
        with self._db:
            cursor = self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation,))
        return cursor.rowcount == 1

    def append(self, conversation: str, event: dict[str, Any]) -> None:
        """Add one transcript event (a JSON object) at the end."""
        encoded = json.dumps(event, default=str)
        with self._db:
            self._db.execute(
                "INSERT INTO events (conversation, seq, event) VALUES (?, "
                "(SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE conversation = ?), ?)",
                (conversation, conversation, encoded),
            )
            self._db.execute(
                "UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), conversation)
            )

    def events(self, conversation: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT event FROM events WHERE conversation = ? ORDER BY seq", (conversation,)
        ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def close_interrupted(self, text: str) -> int:
        """End every tool call the transcripts left open (a ``tool_call`` event with no
        ``tool_result`` of the same id after it): the host that ran it stopped, so a
        ``tool_result`` marked ``interrupted`` is appended, with ``text``.  Call it when a
        host starts, before any call of its own runs; returns how many were closed."""
        rows = self._db.execute(
            "SELECT conversation, event FROM events WHERE json_extract(event, '$.kind') "
            "IN ('tool_call', 'tool_result') ORDER BY conversation, seq"
        ).fetchall()
        open_calls: dict[tuple[str, str], dict[str, Any]] = {}
        for conversation, raw in rows:
            event = json.loads(raw)
            key = (conversation, str(event.get("id")))
            if event.get("kind") == "tool_call":
                open_calls[key] = event
            else:
                open_calls.pop(key, None)
        for (conversation, call_id), call in open_calls.items():
            self.append(conversation, _interrupted(call_id, call, text))
        return len(open_calls)

    def save_messages(self, conversation: str, messages: list[Any]) -> None:
        """The model's messages so far (what it is sent next turn)."""
        with self._db:
            self._db.execute(
                "UPDATE conversations SET messages = ? WHERE id = ?",
                (json.dumps(messages, default=str), conversation),
            )

    def messages(self, conversation: str) -> list[Any]:
        row = self._db.execute(
            "SELECT messages FROM conversations WHERE id = ?", (conversation,)
        ).fetchone()
        loaded = json.loads(row[0]) if row else []
        return loaded if isinstance(loaded, list) else []
