"""Failover across replicas: one upstream served by several URLs (``proxy([a, b])``, or a
gateway's ``url = [a, b]``).

Each replica is an ordinary :class:`~mcpkit.compose.upstream.Upstream` with its own
connection, health checks and reconnect loop; this class presents them as one upstream
to its owner (a proxy, a gateway).  Calls go round robin over the replicas that are connected
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

import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..client import Client
from .upstream import Upstream, UpstreamUnavailable

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from .bridge import FrontCall

T = TypeVar("T")

__all__ = ["AnyUpstream", "ReplicaSet", "make_upstream", "replica_urls", "retry_safe"]

log = logging.getLogger("mcpkit.compose")


class ReplicaSet:
    replicated = True
    #: Replicas take the client path (see the module docstring).
    lane = None

    def __init__(self, name: str, urls: Sequence[str], **options: Any) -> None:
        """``options`` are each replica's (see :class:`~mcpkit.compose.upstream.Upstream`)."""
        self.name = name
        self.replicas = [Upstream(name, url, **options) for url in urls]
        first = self.replicas[0]
        self.cache, self.prefix, self.source = first.cache, first.prefix, first.source
        self.timeout = first.timeout
        #: The first replica's URL (they are one server).
        self.url = first.url
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
        return "; ".join(f"{r.url}: {r.error}" for r in self.replicas)

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
        self,
        fn: Callable[[Client], Awaitable[T]],
        front: FrontCall | None = None,
        *,
        safe: bool = False,
    ) -> T:
        """``fn`` on the next connected replica; on a replica failure, again on the next
        one when ``safe``."""
        tried: list[str] = []
        for replica in self._live():
            try:
                return await replica.call(fn, front)
            except UpstreamUnavailable as exc:
                tried.append(f"{replica.url}: {exc.detail} [correlation id {exc.reference}]")
                if not safe:
                    raise
                log.warning(
                    "upstream %s: replica %s failed during a call; retrying it on another "
                    "replica (correlation id %s)",
                    self.name,
                    replica.url,
                    exc.reference,
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
    async def run(self, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
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


#: What a proxy or a gateway forwards to: one connection, or a set of replicas.
AnyUpstream = Upstream | ReplicaSet


def replica_urls(target: object) -> list[str] | None:
    """The replica URLs when ``target`` is a list of several ``http(s)://`` URLs (a list
    of other strings is a command line)."""
    if (
        isinstance(target, (list, tuple))
        and len(target) > 1
        and all(isinstance(t, str) and t.startswith(("http://", "https://")) for t in target)
    ):
        return list(target)
    return None


def make_upstream(name: str, target: Any, **options: Any) -> AnyUpstream:
    """An :class:`Upstream`, or a :class:`ReplicaSet` when ``target`` lists replicas."""
    urls = replica_urls(target)
    if urls is not None:
        return ReplicaSet(name, urls, **options)
    return Upstream(name, target, **options)


def retry_safe(method: str, tool: dict[str, Any] | None) -> bool:
    """Whether a replica failure mid-call may be retried on another replica: reads,
    and tools that say repeating them is harmless (idempotent or read-only)."""
    if method != "tools/call":
        return True  # resources/read, prompts/get
    notes = tool.get("annotations") if tool is not None else None
    if not isinstance(notes, dict):
        return False
    return notes.get("idempotentHint") is True or notes.get("readOnlyHint") is True
