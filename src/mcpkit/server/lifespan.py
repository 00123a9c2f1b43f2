"""The part of :class:`~mcpkit.server.Server` that lives as long as the process: the
state backend, the task manager, background work and the user's lifespan, entered once
however many transports and requests share the server.  A mixin (split out of
``server.py`` to keep that file about requests and registrations); it owns no
registrations and answers no requests.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self, TypedDict, Unpack, cast

import anyio
import anyio.lowlevel

from ..protocol.sealing import Keyring
from ..state.base import StateBackend

if TYPE_CHECKING:
    from .server import Server
    from .tasks import TaskManager

__all__ = ["RunOptions", "ServerRuntime", "StateStartupError"]

log = logging.getLogger("mcpkit.server")


class StateStartupError(Exception):
    """The state store or the sealing key file cannot be used; the message is one line
    for the operator (``mcpkit serve`` prints it and exits 2)."""


class RunOptions(TypedDict, total=False):
    """What :meth:`ServerRuntime.run` passes to the launcher
    (:func:`mcpkit.transports.launch.serve`, same names and defaults) for HTTP."""

    host: str
    port: int
    path: str
    legacy: bool
    modern: bool
    allowed_hosts: Sequence[str]
    allowed_origins: Sequence[str]
    log_level: str


class ServerRuntime:
    """State, tasks, background work and lifespan (see :class:`~mcpkit.server.Server`)."""

    _keyring: Keyring | None
    _state: StateBackend | None
    _state_url: str | None
    _tasks: TaskManager | None
    _tg: Any  # an anyio TaskGroup while running, else None; others reach it through spawn()
    _lifespan: Callable[[Any], contextlib.AbstractAsyncContextManager[Any]] | None
    _lifespan_stack: contextlib.AsyncExitStack | None
    _lifespan_users: int
    _lifespan_lock: anyio.Lock | None
    #: The event loop (``anyio.lowlevel.current_token()``) the lock was made in.
    _lifespan_loop: object = None
    _lifespan_idle: anyio.Event | None
    lifespan_state: Any
    task_ttl_ms: int
    task_poll_interval_ms: int
    # -- task workers (see server/workers.py) --
    #: "in-process": a task-backed call runs on the replica that received it;
    #: "external": it is queued (Redis) for ``mcpkit worker`` processes.
    task_workers: str = "in-process"
    #: With external workers: unfinished tasks one principal may have queued (0: no cap).
    max_queued_tasks: int = 1000
    # -- end task workers --

    @property
    def keyring(self) -> Keyring:
        """Keys sealing MRTR request state: configured, from ``MCPKIT_SEALING_KEYS``, the
        state backend when it spans processes (set when the server starts), or else the
        private key file of this server in the per-user data directory
        (:func:`~mcpkit.server.keys.default_key_file`), shared by its processes.  A key file
        that is not private is refused (:class:`~mcpkit.server.keys.InsecureKeyFile`); one
        that cannot be created gives a key of this process alone, with one warning."""
        if self._keyring is None:
            self._keyring = Keyring.from_env() or self._file_keyring()
        return self._keyring

    @keyring.setter
    def keyring(self, value: Keyring) -> None:
        self._keyring = value

    def _file_keyring(self) -> Keyring:
        from ..state.base import StateLocationError
        from .keys import default_key_file, load_key_file

        try:
            return load_key_file(default_key_file(self._server_name()))
        except StateLocationError as exc:
            log.warning("%s; sealing with a key of this process alone", exc)
            return Keyring([secrets.token_bytes(32)])

    def _server_name(self) -> str:
        info = getattr(self, "info", None)
        name = info.get("name") if isinstance(info, dict) else None
        return str(name or "mcpkit")

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> StateBackend:
        """Where tasks, handles, sealing keys and change fan-out live (default: memory)."""
        if self._state is None:
            from ..state.base import open_backend

            self._state = open_backend(self._state_url or "memory:")
        return self._state

    @state.setter
    def state(self, value: StateBackend | str) -> None:
        if isinstance(value, str):
            self._state, self._state_url = None, value
        else:
            self._state = value
        self._tasks = None

    def use_default_state(self, transport: Literal["stdio", "http"] = "http") -> None:
        """The default backend, unless one was chosen.  Over stdio: memory (the process
        lives as long as its one client; nothing needs to outlive it, and nothing is
        written where it was started).  Over HTTP: SQLite in this server's folder of the
        per-user data directory (:func:`~mcpkit.state.base.default_state_dir`), private
        to its user, shared by its replicas on this machine.  When that folder cannot be
        used: one warning, and memory."""
        if self._state is not None or self._state_url is not None:
            return
        if transport == "stdio":
            self.state = "memory:"
            return
        from ..state.base import StateLocationError, default_state_dir, open_backend

        database = default_state_dir(self._server_name()) / "state.db"
        try:
            self.state = open_backend(f"sqlite:///{database}")
        except StateLocationError as exc:
            log.warning("%s; keeping state in memory (it ends with this process)", exc)
            self.state = "memory:"

    def open_state(self, transport: Literal["stdio", "http"] = "http") -> StateBackend:
        """Choose (:meth:`use_default_state`) and open the state backend now, and check an
        existing sealing key file when the keys will come from it, so that a location that
        cannot be used stops the start with one line (:class:`StateStartupError`) rather
        than a traceback from the first request."""
        from ..state.base import StateLocationError

        self.use_default_state(transport)
        try:
            backend = self.state
            if backend.url.startswith("memory") and self._keyring is None:
                self._check_key_file()
        except (StateLocationError, PermissionError, ValueError) as exc:
            raise StateStartupError(str(exc)) from None
        return backend

    def _check_key_file(self) -> None:
        """An existing key file that is not private is refused now (one is created only
        when the first request needs it)."""
        if Keyring.from_env() is not None:
            return
        from .keys import check_key_file, default_key_file

        path = default_key_file(self._server_name())
        if path.exists():
            check_key_file(path)

    def run(
        self, transport: Literal["stdio", "http"] = "stdio", **options: Unpack[RunOptions]
    ) -> None:
        """Serve in the foreground, as ``mcpkit serve`` would: ``python demo.py`` works.

        ``transport="http"`` takes the :class:`RunOptions` (see
        :func:`mcpkit.transports.launch.serve`).  The state backend defaults as on the
        command line (:meth:`use_default_state`); one that cannot be used exits with one
        line.
        """
        try:
            self.open_state(transport)
        except StateStartupError as exc:
            raise SystemExit(f"{self._server_name()}: {exc}") from None
        # The one place the framework reaches the transports: a launcher, imported only
        # when called (tests/test_architecture.py lists it as the allowed exception).
        from ..transports.launch import serve

        serve(cast(Any, self), transport, **options)

    @property
    def tasks(self) -> TaskManager:
        """The :class:`~mcpkit.server.tasks.TaskManager` (created on first use)."""
        if self._tasks is None:
            from .tasks import TaskManager

            self._tasks = TaskManager(
                cast("Server", self),
                self.state,
                ttl_ms=self.task_ttl_ms,
                poll_interval_ms=self.task_poll_interval_ms,
            )
        return self._tasks

    @property
    def can_spawn(self) -> bool:
        """Whether :meth:`spawn` can run background work now (the server is running)."""
        return self._tg is not None

    def spawn(self, fn: Callable[[], Awaitable[object]]) -> None:
        """Run ``fn()`` in the background for as long as the server runs (task workers)."""
        if self._tg is None:
            raise RuntimeError(
                "background work needs a running server: use `async with server.running()` "
                "(transports and `mcpkit serve` do this)"
            )
        self._tg.start_soon(fn)

    # ------------------------------------------------------------------ lifespan
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Self]:
        """Enter the user's lifespan once per process, however many transports or
        requests use the server (reference-counted; re-entrant).  Also hosts background
        work (task workers, cross-replica change relay).

        The task that entered first owns the background task group, which only that task
        may exit: when it leaves while others still use the server (overlapping, not
        nested, users), it waits for the last of them and then closes everything."""
        loop = anyio.lowlevel.current_token()
        if self._lifespan_lock is None or self._lifespan_loop is not loop:
            # A lock belongs to one event loop: a server object reused under another one
            # (a test suite parametrized over asyncio and trio) gets a fresh lock there.
            # Nothing can be waiting on the old lock from this loop, so no race.
            self._lifespan_lock, self._lifespan_loop = anyio.Lock(), loop
        lock = self._lifespan_lock
        async with lock:
            first = self._lifespan_users == 0
            if first:
                stack = contextlib.AsyncExitStack()
                own_tg = self._tg = await stack.enter_async_context(anyio.create_task_group())
                try:
                    await self._attach_state(stack)
                    if self._lifespan is not None:
                        lifespan = self._lifespan(self)
                        self.lifespan_state = await stack.enter_async_context(lifespan)
                except BaseException:  # a lifespan that fails to start leaves nothing open
                    self._tg = None
                    own_tg.cancel_scope.cancel()
                    await stack.aclose()
                    raise
                self._lifespan_stack = stack
                self._lifespan_idle = anyio.Event()
            idle = self._lifespan_idle
            self._lifespan_users += 1
        try:
            yield self
        finally:
            with anyio.CancelScope(shield=True):
                async with lock:
                    self._lifespan_users -= 1
                    if self._lifespan_users == 0 and idle is not None:
                        idle.set()
                if first and idle is not None:
                    await idle.wait()  # at once when we were the last user
                    async with lock:
                        if self._lifespan_stack is stack:  # nobody started a new one since
                            self._lifespan_stack = self._tg = None
            if first:
                # Exit in the task that entered, outside the shield above (the task
                # group's scope must be the current one).
                own_tg.cancel_scope.cancel()
                await stack.aclose()

    async def _attach_state(self, stack: contextlib.AsyncExitStack) -> None:
        """Reap expired records; share sealing keys and change events through the
        backend when it spans processes (SQLite, Redis)."""
        backend = self.state
        from ..state.reaper import reap_forever

        self._tg.start_soon(reap_forever, backend)
        if backend.url.startswith("memory"):
            return
        if self._keyring is None and Keyring.from_env() is None:
            from .keys import load_shared_keyring

            self._keyring = await load_shared_keyring(backend)
        from .relay import start_relay

        await start_relay(cast("Server", self), backend, self._tg)
