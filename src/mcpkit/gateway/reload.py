"""Live reload of the gateway's configuration (SIGHUP, or ``--watch`` on the file).

A reload is two steps, so that a bad file never half-applies:

1. **Prepare** (may fail): parse and validate the new file, and build everything that can
   fail from it (the OAuth front's verifier, a JWKS file).  Settings a running process
   cannot change (``gateway.state``, ``gateway.name``, ``gateway.metrics``) are refused
   here too.  Any failure keeps the running config and logs one line.
2. **Apply** (cannot fail): start the upstreams that are new or whose settings changed and
   give each its first connection attempt, then swap every reference in one step with no
   ``await`` in between (an asyncio task switch cannot see half of it).  An upstream whose
   settings are unchanged is the *same object* afterwards: its connection, process and
   caches are kept.  Removed or replaced upstreams retire in the background once their
   in-flight calls have finished (a call holds the upstream it started on).  The front
   hears ``list_changed`` for tools, prompts and resources when the set of upstreams or
   the rules changed (new upstreams also announce themselves when they connect).

Every attempt is counted in ``mcp_gateway_config_reloads_total{result}``.
"""

from __future__ import annotations

import hashlib
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..compose.replicas import AnyUpstream
from ..server.mount import NameClash
from . import custom
from .audit import AuditLog
from .auth import GatewayAuthenticator
from .config import ConfigError, GatewayConfig, load_config
from .credentials import connect
from .policy import Authorizer
from .server import rate_limiter

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from .app import GatewayApp

_FIXED = ("state", "name", "metrics")


@dataclass
class Prepared:
    config: GatewayConfig
    authenticator: GatewayAuthenticator
    #: A new audit log when its path changed (opened here: opening can fail).
    audit: AuditLog | None = None


def prepare(current: GatewayConfig, path: Path) -> Prepared:
    """Step 1: everything that can fail.  Raises ``ConfigError`` (or what building the
    front raised) with a message meant for one log line."""
    config = load_config(path)
    for key in _FIXED:
        if getattr(config, key) != getattr(current, key):
            raise ConfigError(f"gateway.{key} cannot change while running (restart instead)")
    endpoints = [(v.name, v.path) for v in config.servers]
    if endpoints != [(v.name, v.path) for v in current.servers]:
        # (what each [[server]] exposes may change; its endpoint is mounted at start)
        raise ConfigError("[[server]] names and paths cannot change while running (restart)")
    authenticator = GatewayAuthenticator(config.auth, config.base_dir)
    audit = AuditLog(config.audit_log) if config.audit_log != current.audit_log else None
    return Prepared(config, authenticator, audit)


async def apply(app: GatewayApp, prepared: Prepared) -> tuple[list[str], list[str]]:
    """Step 2: swap in the prepared config; (started, retired) upstream names."""
    server = app.server
    new = prepared.config
    current = {u.name: u for u in server.upstreams}
    upstreams: list[AnyUpstream] = []
    started: list[AnyUpstream] = []
    for wanted in new.upstreams:
        have = current.get(wanted.name)
        if have is not None and have.source == wanted and have.cache == new.cache:
            upstreams.append(have)
        else:
            fresh = connect(wanted, server._upstream_changed, cache=new.cache)
            upstreams.append(fresh)
            started.append(fresh)
    kept = {id(u) for u in upstreams}
    retired = [u for u in server.upstreams if id(u) not in kept]
    for upstream in started:
        server.spawn(upstream.run)
    for upstream in started:  # as at start-up: a slow one joins when it is up
        with anyio.move_on_after(max(5.0, upstream.timeout)):
            await upstream.first_attempt.wait()
    try:  # two upstreams offering one name: refused like at start, the old set stays
        await server.check_names(upstreams)
    except NameClash:
        for upstream in started:
            server.spawn(upstream.stop)
        raise
    old_config = server.config
    policy_changed = (new.rules, new.default_effect) != (
        old_config.rules,
        old_config.default_effect,
    )
    limiter = server.limiter
    if new.rate_limits != server.config.rate_limits:
        limiter = rate_limiter(new)
    old_audit = server.audit
    audit = prepared.audit or old_audit
    # ---- the swap: no await from here to the end of the block
    server.config = new
    server.upstreams = upstreams
    server.authorizer = Authorizer(new.rules, new.default_effect)
    server.limiter = limiter
    server.audit = audit
    server.private = new.auth.mode != "none"
    server.cache_scope = "private" if server.private else "public"
    server._proxy_tools.clear()
    custom.install(server)  # (the forwarded custom methods the new file names)
    for upstream in retired:  # (a replaced upstream keeps its name: out first, then in)
        server.composed.unmount(upstream.name)
    for upstream in started:
        server.composed.add(upstream)
    app.install(new, prepared.authenticator)
    # ---- end of the swap
    if audit is not old_audit:
        old_audit.close()  # (records are written synchronously: none is half-way)
    if started or retired or policy_changed:  # what a caller may list changed too
        server._upstream_changed("*", "all", None)
    for upstream in retired:
        server.spawn(upstream.retire)
    return [u.name for u in started], [u.name for u in retired]


class Reloader:
    """Reloads ``path`` into ``app`` on request, on SIGHUP and (opt-in) on file change."""

    def __init__(self, app: GatewayApp, path: str | Path) -> None:
        self.app = app
        self.path = Path(path)
        self._lock = anyio.Lock()
        self._seen = self._fingerprint()

    def _fingerprint(self) -> str | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError:
            return None

    async def reload(self) -> bool:
        """One reload attempt; False (and the old config kept) when the file is invalid."""
        async with self._lock:
            metrics = self.app.server.metrics
            self._seen = self._fingerprint()
            try:
                prepared = prepare(self.app.config, self.path)
            except Exception as exc:
                return self._rejected(exc)
            try:
                started, retired = await apply(self.app, prepared)
            except NameClash as exc:  # (apply stopped what it started: the old set stays)
                return self._rejected(exc)
            if metrics.enabled:
                metrics.reloads.labels("applied").inc()
            print(
                f"mcpkit gateway: config reloaded ({len(prepared.config.upstreams)} upstreams; "
                f"started {started or 'none'}, retired {retired or 'none'})",
                file=sys.stderr,
                flush=True,
            )
            return True

    def _rejected(self, exc: Exception) -> bool:
        """Say why a reload was refused, in one line on stderr like the gateway's start-up
        line (not also a log record: with no logging configured, Python would print it a
        second time), and count it."""
        message = str(exc).replace("\n", " ")
        print(
            f"mcpkit gateway: config reload rejected, keeping the running config: {message}",
            file=sys.stderr,
            flush=True,
        )
        metrics = self.app.server.metrics
        if metrics.enabled:
            metrics.reloads.labels("rejected").inc()
        return False

    async def on_sighup(self) -> None:
        with anyio.open_signal_receiver(signal.SIGHUP) as signals:
            async for _ in signals:
                await self.reload()

    async def watch(self, interval: float = 1.0) -> None:
        """Poll the file's content (a hash, so an editor's rewrite with the same bytes or
        a touched mtime is not a reload; no extra dependency needed for one file)."""
        while True:
            await anyio.sleep(interval)
            if self._fingerprint() not in (self._seen, None):
                await self.reload()


def run_reloader(app: GatewayApp, path: str | Path, *, watch: bool, tg: TaskGroup) -> Reloader:
    """Start the SIGHUP listener (and the file watcher) in ``tg``."""
    reloader = Reloader(app, path)
    if hasattr(signal, "SIGHUP"):
        tg.start_soon(reloader.on_sighup)
    if watch:
        tg.start_soon(reloader.watch)
    return reloader
