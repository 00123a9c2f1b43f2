"""Failover across replicas: one upstream served by several URLs (``url = [a, b]``).

Each replica is an ordinary :class:`~mcpkit.gateway.upstream.Upstream` with its own
connection, health checks and reconnect loop; this class presents them as one upstream
to the rest of the gateway.  Calls go round robin over the replicas that are connected
(the health checks take a dead one out of the rotation and put it back when it answers
again).  When a replica fails *during* a call that is safe to repeat (lists, reads,
prompts, completions, and tools annotated ``idempotentHint`` or ``readOnlyHint``), the
call is retried on the next connected replica; any other call fails as it would without
replicas (retrying could run its side effects twice).

Replicas are expected to serve the same tools, prompts and resources (they are one
server); lists, capabilities and cache freshness come from one connected replica.  A
replicated upstream is forwarded through the client path rather than the raw fast lane.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..client import Client
from ..compose.proxy import UpstreamUnavailable
from .config import UpstreamConfig
from .upstream import Upstream

log = logging.getLogger("mcpkit.gateway")


class ReplicaSet:
    replicated = True
    #: Replicas take the client path (see the module docstring).
    lane = None

    def __init__(
        self,
        config: UpstreamConfig,
        on_change: Callable[[str, str, str | None], None],
        *,
        cache: bool = True,
    ) -> None:
        self.config = config
        self.cache = cache
        self.name = config.name
        self.prefix = config.prefix
        self.replicas = [
            Upstream(dataclasses.replace(config, url=url, replicas=()), on_change, cache=cache)
            for url in config.replicas
        ]
        self._turn = itertools.count()
        self.first_attempt = anyio.Event()

    # ------------------------------------------------------------------ state
    def _live(self) -> list[Upstream]:
        """Connected replicas, starting at the next one in the rotation."""
        live = [r for r in self.replicas if r.client is not None]
        if len(live) > 1:
            start = next(self._turn) % len(live)
            live = live[start:] + live[:start]
        return live

    @property
    def client(self) -> Client | None:
        """A connected replica's client (None: all are down)."""
        return next((r.client for r in self.replicas if r.client is not None), None)

    @property
    def error(self) -> str | None:
        if self.client is not None:
            return None
        return "; ".join(f"{r.config.url}: {r.error}" for r in self.replicas)

    @property
    def capabilities(self) -> dict[str, Any]:
        live = [r for r in self.replicas if r.client is not None]
        return live[0].capabilities if live else {}

    def _one(self) -> Upstream:
        live = [r for r in self.replicas if r.client is not None]
        return live[0] if live else self.replicas[0]

    def live(self) -> Client:
        """A connected replica's client, or :class:`UpstreamUnavailable`.  (Does not advance the
        rotation: only :meth:`call` and :meth:`listing` choose the replica that serves.)"""
        client = self.client
        if client is None:
            raise UpstreamUnavailable(self.name, self.error or "no replica is connected")
        return client

    # ------------------------------------------------------------------ calls
    async def call(
        self, fn: Callable[[Client], Awaitable[Any]], front: Any = None, *, safe: bool = False
    ) -> Any:
        """``fn`` on the next connected replica; on a replica failure, again on the next
        one when ``safe``."""
        tried: list[str] = []
        for replica in self._live():
            try:
                return await replica.call(fn, front)
            except UpstreamUnavailable as exc:
                tried.append(f"{replica.config.url}: {exc.message}")
                if not safe:
                    raise
                log.warning(
                    "upstream %s: replica %s failed during a call; retrying it on another "
                    "replica (%s)",
                    self.name,
                    replica.config.url,
                    exc.message,
                )
        raise UpstreamUnavailable(
            self.name, "; ".join(tried) or self.error or "no replica is connected"
        )

    async def listing(self, kind: str) -> list[dict[str, Any]]:
        failure: UpstreamUnavailable | None = None
        for replica in self._live():
            try:
                return await replica.listing(kind)
            except UpstreamUnavailable as exc:  # a list is always safe to ask again elsewhere
                failure = exc
        raise failure or UpstreamUnavailable(self.name, self.error or "no replica is connected")

    def offers(self, kind: str) -> bool:
        return self._one().offers(kind)

    def freshness(self, kind: str) -> tuple[int, str]:
        return self._one().freshness(kind)

    def subscribable(self) -> bool:
        return any(r.subscribable() for r in self.replicas)

    def watch(self, uri: str, wanted: bool) -> None:
        # Every replica: the one that changes the resource is the one that knows.
        for replica in self.replicas:
            replica.watch(uri, wanted)

    # ------------------------------------------------------------------ lifecycle
    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            for replica in self.replicas:
                tg.start_soon(replica.run)
            tg.start_soon(self._first_attempts)
            task_status.started()

    async def _first_attempts(self) -> None:
        """Ready to serve as soon as one replica is (or all have tried)."""
        async with anyio.create_task_group() as tg:

            async def one(replica: Upstream) -> None:
                await replica.first_attempt.wait()
                if replica.client is not None:
                    tg.cancel_scope.cancel()

            for replica in self.replicas:
                tg.start_soon(one, replica)
        self.first_attempt.set()

    async def stop(self, timeout: float = 10.0) -> None:
        async with anyio.create_task_group() as tg:
            for replica in self.replicas:
                tg.start_soon(replica.stop, timeout)

    async def retire(self, grace: float = 0.5, timeout: float | None = None) -> None:
        async with anyio.create_task_group() as tg:
            for replica in self.replicas:
                tg.start_soon(replica.retire, grace, timeout)


#: What the gateway routes to: one connection, or a set of replicas.
AnyUpstream = Upstream | ReplicaSet


def make_upstream(
    config: UpstreamConfig, on_change: Callable[[str, str, str | None], None], *, cache: bool
) -> AnyUpstream:
    """An :class:`Upstream`, or a :class:`ReplicaSet` when the config lists replicas."""
    if config.replicas:
        return ReplicaSet(config, on_change, cache=cache)
    return Upstream(config, on_change, cache=cache)
