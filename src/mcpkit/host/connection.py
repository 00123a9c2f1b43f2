"""One server, one client: its lifecycle, health and restarts, isolated from the others.

Each :class:`ServerConnection` owns exactly one :class:`~mcpkit.client.Client` (one stdio
process or one HTTP origin) with callbacks bound to *this* server's name, so a prompt always
says which server asks, and nothing one server sends can reach another: the host passes
between them only what a person or the model decides to pass.

Lifecycle: ``connecting`` -> ``ready``; a transport failure (process exit, lost connection,
failed health ping) -> ``restarting`` with backoff (0.5 s doubling to 30 s); more than
``max_restarts`` failures within ``restart_window`` seconds -> ``failed`` until
:meth:`restart` is called by hand (a crash-looping server must not spin).  Calls made while
a server is down fail at once with :class:`ServerUnavailable` instead of hanging.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from ..client import Client, ClientError, Notification, ServerInfo, TransportError
from ..client.config import client_options
from .apps import client_capabilities
from .config import ServerConfig

__all__ = ["ConnectionCallbacks", "ServerConnection", "ServerUnavailable"]

log = logging.getLogger("mcpkit.host")
T = TypeVar("T")

_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
    "notifications/resources/updated": "resource",
}


class ServerUnavailable(ClientError):
    """The server is not connected (starting, restarting, failed, not trusted yet), or the
    host has no server of that name (``unknown``)."""

    def __init__(self, message: str, *, unknown: bool = False) -> None:
        super().__init__(message)
        self.unknown = unknown


@dataclass
class ConnectionCallbacks:
    """What the host answers on a server's behalf; each receives the server name first."""

    elicit: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None
    elicit_url: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None
    #: A URL elicitation's page reported back (``notifications/elicitation/complete``).
    url_completed: Callable[[str, str], None] | None = None
    sample: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None
    roots: Callable[[str], Awaitable[list[dict[str, Any]]]] | None = None
    log: Callable[[str, dict[str, Any]], None] | None = None
    #: The httpx ``Auth`` for an HTTP server (OAuth), and its state for :meth:`status`.
    auth: Any = None
    auth_status: Callable[[], dict[str, Any]] | None = None


class ServerConnection:
    """One server's client with its lifecycle: connect, health checks, restarts with backoff,
    and ``failed`` after too many crashes (see the module's description)."""

    def __init__(
        self,
        config: ServerConfig,
        callbacks: ConnectionCallbacks,
        on_event: Callable[[str, dict[str, Any]], None],
        *,
        health_interval: float = 10.0,
        max_restarts: int = 5,
        restart_window: float = 60.0,
    ) -> None:
        self.config = config
        self.name = config.name
        self.callbacks = callbacks
        self._emit = on_event
        self.health_interval = health_interval
        self.max_restarts = max_restarts
        self.restart_window = restart_window
        self.state = "idle"
        self.error: str | None = None
        self.client: Client | None = None
        self.info: ServerInfo | None = None
        self.restarts = 0
        self._failures: list[float] = []
        self._dead = anyio.Event()
        self._wake = anyio.Event()
        self._ready = anyio.Event()
        self._stopping = False
        self._connecting: anyio.CancelScope | None = None
        #: Set when :meth:`run` has returned and the client is closed.
        self.finished = anyio.Event()
        #: Set once the first connection attempt is over (whatever its outcome).
        self.attempted = anyio.Event()

    # ------------------------------------------------------------------ facts
    def status(self) -> dict[str, Any]:
        """This server's state for a status line or the page: state, error, transport, restarts,
        era, version, server info, instructions and login state."""
        info = self.info
        return {
            "name": self.name,
            "state": self.state,
            "error": self.error,
            "transport": self.config.transport,
            "target": self.config.describe(),
            "restarts": self.restarts,
            "era": info.era if info else None,
            "protocolVersion": info.protocol_version if info else None,
            "serverInfo": dict(info.implementation) if info else None,
            "instructions": info.instructions if info else None,
            "auth": self.callbacks.auth_status() if self.callbacks.auth_status else None,
        }

    def _set(self, state: str, error: str | None = None) -> None:
        self.state, self.error = state, error
        if state == "ready":
            self._ready.set()
        elif self._ready.is_set():
            self._ready = anyio.Event()
        self._emit("server", self.status())

    # ------------------------------------------------------------------ lifecycle
    def _make_client(self) -> Client:
        cfg = self.config
        cb = self.callbacks
        name = self.name

        def bind(fn: Callable[[str, dict[str, Any]], Awaitable[Any]] | None) -> Any:
            if fn is None:
                return None

            async def bound(params: dict[str, Any]) -> Any:
                return await fn(name, params)

            return bound

        roots: Any = None
        if cb.roots is not None:
            provider = cb.roots

            async def roots_for_server() -> list[dict[str, Any]]:
                return await provider(name)

            roots = roots_for_server
        # tasks=True declares the tasks extension: a task="required" tool then works, its
        # task followed by the client until it ends (tools/call returns the final result).
        options: dict[str, Any] = {
            **client_options(cfg),
            "tasks": True,
            "extra_capabilities": client_capabilities(),
        }
        if cfg.url and cb.auth is not None:
            options["auth"] = cb.auth
        return Client(
            cfg.target(),
            elicitation=bind(cb.elicit),
            url_elicitation=bind(cb.elicit_url),
            sampling=bind(cb.sample),
            # The host's sampler hands a request's tools to the model and returns its tool
            # calls (never running them), so it declares sampling.tools when it samples.
            sampling_tools=cb.sample is not None,
            roots=roots,
            on_notification=self._notified,
            on_log=self._logged,
            **options,
        )

    async def run(self) -> None:
        """Keep the server connected until cancelled (or :meth:`stop`); ``attempted`` is set
        after the first try, successful or not."""
        delay = 0.5
        try:
            while not self._stopping:
                client = self._make_client()
                self._set("connecting" if not self.restarts else "restarting", self.error)
                try:
                    # Entered and left in this task, unshielded: the transport's own task
                    # group must be exited in the scope it was entered in (it shields its
                    # shutdown itself).
                    # While it is still connecting (which may wait for a person to log in),
                    # stop() cancels the attempt outright; once ready, it ends gracefully.
                    connecting = self._connecting = anyio.CancelScope()
                    with connecting:
                        async with client:
                            self._connecting = None
                            self.info = client.server_info
                            self.client = client
                            self._dead = anyio.Event()
                            if self._stopping:
                                break
                            self._set("ready")
                            delay = 0.5
                            self.attempted.set()
                            await self._supervise(client)
                except Exception as exc:
                    self.error = str(exc) or type(exc).__name__
                    log.warning("server %s: %s", self.name, self.error)
                finally:
                    self.client = None
                if self._stopping:
                    break
                self.attempted.set()
                now = time.monotonic()
                self._failures = [t for t in self._failures if now - t < self.restart_window]
                self._failures.append(now)
                self.restarts += 1
                if len(self._failures) > self.max_restarts:
                    self._set(
                        "failed",
                        f"{self.error} (failed {len(self._failures)} times in "
                        f"{self.restart_window:g}s; restart it by hand)",
                    )
                    self._wake = anyio.Event()
                    if not self._stopping:
                        await self._wake.wait()
                    self._failures.clear()
                    delay = 0.5
                    continue
                self._set("restarting", self.error)
                with anyio.move_on_after(delay):
                    self._wake = anyio.Event()
                    if not self._stopping:
                        await self._wake.wait()
                delay = min(delay * 2, 30.0)
        finally:
            self.attempted.set()
            self.finished.set()

    async def _supervise(self, client: Client) -> None:
        """Return (by raising) when the connection is dead or a restart was asked for."""
        async with anyio.create_task_group() as tg:
            caps = self.info.capabilities if self.info else {}
            if client.era == "modern":
                wants = {
                    k: bool((caps.get(k) or {}).get("listChanged"))
                    for k in ("tools", "prompts", "resources")
                }
                if any(wants.values()):
                    tg.start_soon(self._listen, client, wants)
            if self.health_interval > 0:
                tg.start_soon(self._health, client)
            await self._dead.wait()
            tg.cancel_scope.cancel()
        if self._stopping:
            return
        raise ConnectionError(self.error or "restart requested")

    async def _listen(self, client: Client, wants: dict[str, bool]) -> None:
        try:
            async with client.listen(
                tools=wants["tools"], prompts=wants["prompts"], resources=wants["resources"]
            ) as sub:
                async for note in sub:
                    self._notified(note)
        except Exception as exc:  # the health check decides whether the server is gone
            log.info("server %s: listen ended: %s", self.name, exc)

    async def _health(self, client: Client) -> None:
        while True:
            await anyio.sleep(self.health_interval)
            try:
                await client.ping(timeout=max(5.0, self.health_interval))
            except Exception as exc:
                self.mark_dead(f"health check failed: {exc}")
                return

    def mark_dead(self, reason: str) -> None:
        """Report the connection lost (``reason`` is shown); the supervisor restarts it."""
        if not self._dead.is_set():
            self._dead.set()
            if self.state == "ready":
                self._set("restarting", reason)

    def restart(self) -> None:
        """Reconnect now (also un-fails a server that gave up)."""
        self.mark_dead("restart requested")
        self._wake.set()

    def stop(self) -> None:
        """Disconnect for good.  The client is closed by :meth:`run` outside any cancelled
        scope, so a stdio server gets its EOF and exits at once (see ``finished``)."""
        self._stopping = True
        if self._connecting is not None:
            self._connecting.cancel()
        self._dead.set()
        self._wake.set()
        self._set("stopped")

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the server is ready; ``TimeoutError`` after ``timeout`` seconds."""
        with anyio.fail_after(timeout):
            while self.state != "ready":
                await self._ready.wait()

    # ------------------------------------------------------------------ use
    async def use(self, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run ``fn(client)``; a transport failure marks the server for a restart."""
        client = self.client
        if client is None or self.state != "ready":
            raise ServerUnavailable(
                f"server {self.name!r} is {self.state}" + (f": {self.error}" if self.error else "")
            )
        try:
            return await fn(client)
        except TransportError as exc:
            self.mark_dead(str(exc))
            raise

    # ------------------------------------------------------------------ inbound
    def _notified(self, note: Notification) -> None:
        if note.method == "notifications/elicitation/complete":
            eid = note.params.get("elicitationId")
            if isinstance(eid, str) and self.callbacks.url_completed is not None:
                self.callbacks.url_completed(self.name, eid)
            return
        kind = _CHANGED.get(note.method)
        if kind is not None:
            self._emit("changed", {"server": self.name, "kind": kind, "uri": note.uri})

    def _logged(self, params: dict[str, Any]) -> None:
        if self.callbacks.log is not None:
            self.callbacks.log(self.name, params)
