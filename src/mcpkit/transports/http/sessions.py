"""Legacy HTTP sessions: bounded, reaped, and optionally shared between replicas.

Without a shared backend a session lives in this process: at most ``max_sessions`` at
once, each dropped after ``idle_s`` without traffic (reaped on the way in, so no
background task is needed).  With a backend (SQLite/Redis) the negotiated part of each
session (version, capabilities, log level, subscriptions, lifecycle state) is stored
there too, so a 2025-11-25 client behind a round-robin load balancer can land on any
replica; live parts (pending server->client requests, SSE event logs, the GET stream)
stay with the replica that holds them, and answers to server->client requests that land
elsewhere are forwarded over the backend's pub/sub.

A notification for one session from outside any of its requests (a URL elicitation
completed at a page of the server's own) goes through :func:`notify_session`: onto the
session's standalone GET stream when this process holds it open, else published on the
backend for the replica that does (:func:`relay_session_notes` delivers there).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ...protocol.correlation import Incoming, Outgoing
from ...protocol.sse import encode_event
from ...runtime.legacy_session import SESSION_HOLDERS, LegacySession
from ...types.codec import DecodeError, decode, encode
from ...types.errors import INTERNAL_ERROR, McpError
from .stream import EventLog, StreamSink

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from contextlib import AbstractAsyncContextManager

log = logging.getLogger("mcpkit.http")

MAX_EVENTS_PER_STREAM = 512
MAX_STREAMS_PER_SESSION = 64
SAVE_EVERY_S = 5.0
#: How long a session read from a shared backend is used again without reading it, while
#: the backend says nothing at all was written since (``StateBackend.change_token``).
FRESH_S = 1.0
#: Where a notification for a session held by another replica is published.
SESSION_NOTES_CHANNEL = "mcpkit:legacy-session-notes"


class StreamLog(EventLog):
    """Events of one SSE stream, kept for resumption."""

    __slots__ = ("changed", "events", "finished", "key", "next_seq")

    def __init__(self, key: str) -> None:
        self.key = key
        self.events: list[tuple[int, bytes]] = []
        self.next_seq = 1
        self.finished = False
        self.changed = anyio.Event()

    def priming_id(self) -> str:
        return f"{self.key}-0"

    def append(self, data: bytes, final: bool) -> str:
        seq = self.next_seq
        self.next_seq += 1
        self.events.append((seq, data))
        if len(self.events) > MAX_EVENTS_PER_STREAM:
            del self.events[0]
        if final:
            self.finished = True
        self.changed.set()
        self.changed = anyio.Event()
        return f"{self.key}-{seq}"

    def after(self, seq: int) -> list[tuple[int, bytes]]:
        return [(s, d) for s, d in self.events if s > seq]


class ReplyWaiter:
    """Where the answer to one server->client request arrives."""

    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.value: dict[str, Any] | None = None
        self.error: McpError | None = None

    def resolve(self, message: dict[str, Any]) -> None:
        if "error" in message:
            err = message["error"] or {}
            code = err.get("code", INTERNAL_ERROR)
            self.error = McpError(code, str(err.get("message", "")), err.get("data"))
        else:
            result = message.get("result")
            self.value = result if isinstance(result, dict) else {}
        self.done.set()

    def fail(self, error: McpError) -> None:
        self.error = error
        self.done.set()


class Cancellable(Protocol):
    """A request's cancel handle: its cancel scope, its exchange (inline tools), or a
    canceller of its task (inline tools inside middleware that may wait)."""

    def cancel(self) -> None: ...


class HttpSession:
    """A legacy session plus what HTTP needs for it in this process."""

    __slots__ = (
        "get_open",
        "incoming",
        "legacy",
        "outgoing",
        "pushed",
        "read_at",
        "read_token",
        "saved",
        "saved_at",
        "stream_counter",
        "streams",
    )

    def __init__(self, legacy: LegacySession) -> None:
        self.legacy = legacy
        self.outgoing: Outgoing[ReplyWaiter] = Outgoing()
        #: Requests being handled, by id: what ``notifications/cancelled`` cancels.
        self.incoming: Incoming[Cancellable] = Incoming()
        self.streams: OrderedDict[str, StreamLog] = OrderedDict()
        self.stream_counter = 0
        self.get_open = False
        #: Messages for the standalone GET stream (server requests with no POST stream).
        self.pushed: StreamSink | None = None
        self.saved: dict[str, Any] | None = None
        self.saved_at = 0.0
        #: The backend's change token taken before the last read of the record, and when.
        self.read_token: object | None = None
        self.read_at = 0.0

    def new_stream(self) -> StreamLog:
        self.stream_counter += 1
        log = StreamLog(f"s{self.stream_counter}-{self.legacy.id[:6]}")
        self.streams[log.key] = log
        while len(self.streams) > MAX_STREAMS_PER_SESSION:
            self.streams.popitem(last=False)
        return log

    def close_local(self) -> None:
        """The session is gone here (deleted, evicted, expired or dropped by another
        replica): fail what waits on the client, cancel what runs for it, end its
        standalone GET stream and mark it closed."""
        for pending in self.outgoing.drain():
            pending.waiter.fail(McpError(INTERNAL_ERROR, "session closed"))
        for scope in self.incoming.all():
            scope.cancel()
        if self.pushed is not None:
            self.pushed.cancel()
        self.legacy.close()


class SessionStore:
    """Sessions by id; bounded by count and idle time; shared through ``backend``."""

    def __init__(self, max_sessions: int, idle_s: float, backend: Any = None) -> None:
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self.backend = backend
        self._sessions: OrderedDict[str, HttpSession] = OrderedDict()
        self._last_reap = 0.0
        SESSION_HOLDERS.add(self)

    def live_legacy_sessions(self) -> list[LegacySession]:
        """The sessions held here (the sessions gauge reads them at collection time)."""
        return [session.legacy for session in list(self._sessions.values())]

    def __len__(self) -> int:
        return len(self._sessions)

    def local(self, session_id: str) -> HttpSession | None:
        return self._sessions.get(session_id)

    async def get(self, session_id: str) -> HttpSession | None:
        session = self._sessions.get(session_id)
        if self.backend is not None:
            now = time.monotonic()
            token = self.backend.change_token()  # before the read: a write after it shows
            if (
                session is not None
                and token is not None
                and token == session.read_token
                and now - session.read_at < FRESH_S
                # The record this process saved outlives the window (only a write, which
                # changes the token, could end it sooner).
                and now + FRESH_S < session.saved_at + self.idle_s
            ):
                # Nothing written anywhere since the last read: the record is as it was.
                self._sessions.move_to_end(session_id)
                session.legacy.touch()
                return session
            record = await self.backend.get_json(_key(session_id))
            if record is None:
                if session is not None:
                    self._forget(session_id)
                return None
            if session is None:
                session = HttpSession(LegacySession.restore(record))
                self._sessions[session_id] = session
                self._bound()
            else:
                LegacySession.restore(record, into=session.legacy)
            session.saved = record
            session.read_token, session.read_at = token, now
            session.legacy.touch()
            return session
        if session is None:
            return None
        if time.monotonic() - session.legacy.last_active > self.idle_s:
            self._forget(session_id)
            return None
        self._sessions.move_to_end(session_id)
        return session

    async def create(self, principal: object) -> HttpSession | None:
        now = time.monotonic()
        if len(self._sessions) >= self.max_sessions or now - self._last_reap > 5.0:
            self.reap(now)
        if len(self._sessions) >= self.max_sessions:
            return None
        session = HttpSession(LegacySession(principal=principal))
        self._sessions[session.legacy.id] = session
        return session

    async def save(self, session: HttpSession, *, force: bool = False) -> None:
        """Store the session's shareable state when it changed (or to refresh its TTL)."""
        if self.backend is None:
            return
        snapshot = session.legacy.snapshot()
        now = time.monotonic()
        if not force and snapshot == session.saved and now - session.saved_at < SAVE_EVERY_S:
            return
        await self.backend.set_json(_key(session.legacy.id), snapshot, self.idle_s)
        session.saved = snapshot
        session.saved_at = now

    def reap(self, now: float | None = None) -> int:
        now = time.monotonic() if now is None else now
        self._last_reap = now
        dead = [
            sid for sid, s in self._sessions.items() if now - s.legacy.last_active > self.idle_s
        ]
        for sid in dead:
            self._forget(sid)
        return len(dead)

    def _bound(self) -> None:
        while len(self._sessions) > self.max_sessions:
            _, oldest = self._sessions.popitem(last=False)
            oldest.close_local()

    def _forget(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close_local()

    async def drop(self, session_id: str) -> None:
        self._forget(session_id)
        if self.backend is not None:
            await self.backend.delete(_key(session_id))


def _key(session_id: str) -> str:
    return f"session:{session_id}"


class NoteBus(Protocol):
    """The pub/sub of a state backend (what :func:`notify_session` needs of it)."""

    async def publish(self, channel: str, data: bytes) -> None: ...

    def subscribe(self, channel: str) -> AbstractAsyncContextManager[AsyncIterator[bytes]]: ...


def push_to_held(session_id: str, message: dict[str, Any]) -> bool:
    """Write ``message`` on the standalone GET stream of ``session_id`` when a store of
    this process holds that stream open (the stores are among the session holders);
    False when none does."""
    chunk = encode_event(encode(message))
    for store in list(SESSION_HOLDERS):
        session = store.local(session_id) if isinstance(store, SessionStore) else None
        if session is not None and session.pushed is not None and session.pushed.push(chunk):
            return True
    return False


async def notify_session(
    session_id: str, method: str, params: dict[str, Any], backend: NoteBus | None
) -> bool:
    """Send a notification to one legacy session from outside its requests: on its GET
    stream here, else published on ``backend`` for the replica holding that stream
    (True: written here; False: published, or dropped without a backend).  A session
    with no GET stream open anywhere does not get it: the notification is not queued."""
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    if push_to_held(session_id, message):
        return True
    if backend is not None:
        await backend.publish(SESSION_NOTES_CHANNEL, encode({"sid": session_id, "m": message}))
    return False


async def relay_session_notes(backend: NoteBus) -> None:
    """Deliver the notifications other replicas publish for sessions whose GET stream
    this process holds (:func:`notify_session`); runs until cancelled, through backend
    outages."""
    delay = 0.5
    while True:
        try:
            async with backend.subscribe(SESSION_NOTES_CHANNEL) as notes:
                delay = 0.5
                async for data in notes:
                    _deliver_note(data)
        except Exception as exc:
            if delay == 0.5:  # once per outage
                log.warning("session notifications from other replicas interrupted (%s)", exc)
        await anyio.sleep(delay)
        delay = min(delay * 2, 5.0)


def _deliver_note(data: bytes) -> None:
    try:
        item = decode(data)
    except DecodeError:
        return
    if isinstance(item, dict) and isinstance(item.get("m"), dict):
        push_to_held(str(item.get("sid", "")), item["m"])
