"""``mcpkit host --web``: the host behind a local web page (see :mod:`.app` and :mod:`.state`)."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import uvicorn

from ...auth.client import TokenStore
from ..config import ConfigError, HostConfig
from ..conversations import ConversationStore
from ..host import Host
from ..loop import sampler_for
from ..models.base import Model, ModelError
from ..settings import ModelSettings, PermissionSettings
from ..trust import TrustStore
from .app import create_app
from .prompts import WebInteraction
from .state import WebHost

__all__ = ["WebHost", "WebInteraction", "create_app", "run_web"]

log = logging.getLogger("mcpkit.host.web")


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    # Listening before the URL is printed: a browser opened at once queues in the backlog
    # until the server accepts, rather than being refused.
    sock.listen(128)
    return sock


async def run_web(
    config: HostConfig,
    *,
    port: int = 0,
    sandbox_port: int = 0,
    model: Model | None = None,
    on_ready: Callable[[str], None] = print,
    health_interval: float = 10.0,
    trust: TrustStore | None = None,
    token_store: TokenStore | None = None,
) -> None:
    """Serve the page on 127.0.0.1 until interrupted; ``on_ready`` gets the URL with the
    per-launch token (port 0 picks a free port).  MCP App views are served from a second
    port, ``sandbox_port``: another origin than the page's (see :mod:`.sandbox`)."""
    # Questions for the page travel as host events (bound late: the host needs the
    # interaction first).
    interaction = WebInteraction(lambda kind, data: host.emit(kind, data))
    host = Host(
        config,
        interaction=interaction,
        health_interval=health_interval,
        sampler=sampler_for(model) if model is not None else None,
        trust=trust,
        token_store=token_store,
        wait=False,
    )  # a log-in may need the page
    settings = ModelSettings()
    permissions = PermissionSettings(settings.path)
    permissions.apply(host.policy)
    if model is None and config.model is None:
        model = _saved_model(settings)
        if model is not None:
            host.sampler = sampler_for(model)
    web = WebHost(
        host,
        interaction,
        model=model,
        system=config.model.system if config.model else None,
        store=_open_store(),
        settings=settings,
        permissions=permissions,
    )
    sock, sandbox_sock = _listen(port), _listen(sandbox_port)
    bound = sock.getsockname()[1]
    web.bind(bound, sandbox_sock.getsockname()[1])
    server = _QuietServer(_server_config(create_app(web)))
    sandbox = _QuietServer(_server_config(web.sandbox.app()))
    async with host, anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, (server, sandbox), interaction)
        tg.start_soon(lambda: sandbox.serve(sockets=[sandbox_sock]))
        on_ready(web.url(bound))
        await server.serve(sockets=[sock])
        sandbox.should_exit = True
        tg.cancel_scope.cancel()


#: Seconds open requests (the event stream, a call waiting for the person) get to finish
#: once the host is asked to stop; then they are cut.
SHUTDOWN_GRACE = 1


def _server_config(app: Any) -> uvicorn.Config:
    return uvicorn.Config(
        app, log_level="warning", lifespan="off", timeout_graceful_shutdown=SHUTDOWN_GRACE
    )


def _saved_model(settings: ModelSettings) -> Model | None:
    """The model chosen on the page last time, if it can still be built."""
    saved = settings.load()
    if saved is None:
        return None
    try:
        return settings.build(saved)
    except (ConfigError, ModelError) as exc:
        log.warning("the saved model cannot be used: %s", exc)
        return None


def _open_store() -> ConversationStore | None:
    """The person's conversations; a location that cannot be written is one line on
    stderr, and the page works without keeping them."""
    try:
        return ConversationStore()
    except (OSError, sqlite3.Error) as exc:
        log.warning("conversations are not kept: %s", exc)
        return None


class _QuietServer(uvicorn.Server):
    """uvicorn's server minus its signal handling: uvicorn re-raises the signal after
    serving, which would tear the host down by cancellation; we stop it ourselves so the
    servers are shut down in order (stdin EOF, then exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _stop_on_signal(servers: tuple[Any, ...], interaction: WebInteraction) -> None:
    """SIGINT or SIGTERM: every question waiting for the person is declined (so the calls
    behind them end), the page and the sandbox stop serving, and ``run_web`` returns."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            interaction.close()
            for server in servers:
                server.should_exit = True
            return
