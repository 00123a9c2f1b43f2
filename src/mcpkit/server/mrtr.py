"""Multi round-trip requests (MRTR, 2026-07-28) with the same handler code as legacy.

A handler asks for input with ``await ctx.elicit(...)`` (or sample / list_roots / ask).
On the legacy era that sends a real server->client request.  On the modern era a server
may not send requests, so the handler is *replayed*: the first time, the missing input
raises :class:`NeedInput`, which the dispatcher turns into an ``InputRequiredResult``
(``inputRequests`` + sealed ``requestState``).  The client answers and retries; the
handler runs again from the top and each ``ask`` now returns the answer recorded for its
key.  Answers from earlier rounds ride along inside the sealed ``requestState``, so any
replica can serve any round and nothing lives in server memory between rounds.

Consequence for authors (documented): code before an ``ask`` runs once per round, so keep
side effects after the last ``ask`` (or make them idempotent).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


class NeedInput(Exception):
    """Raised inside a modern handler: these input requests must be answered first."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__("input required")
        self.requests = requests


@dataclass(slots=True)
class InputRound:
    """Answers known for this request so far, and the handler's own carried state."""

    responses: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    counter: int = 0

    def next_key(self, prefix: str) -> str:
        key = f"{prefix}-{self.counter}"
        self.counter += 1
        return key


@dataclass(slots=True)
class RoundSpan:
    """Set by the telemetry middleware while it traces a request: ``current`` is its
    span's W3C ``traceparent``, sealed into ``requestState`` with the answers; ``previous``
    is the one the retry's state carried, which the span then links to.  A holder (not a
    value) because the state is opened deep inside the dispatch, after the span started."""

    current: str
    previous: str | None = None


ROUND_SPAN: ContextVar[RoundSpan | None] = ContextVar("mcpkit_round_span", default=None)


def sealed_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with the traced span's ``traceparent`` (key ``t``) when there is one."""
    span = ROUND_SPAN.get()
    if span is not None:
        payload["t"] = span.current
    return payload


def opened_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Note the previous round's span from an opened ``requestState`` payload."""
    span = ROUND_SPAN.get()
    previous = payload.get("t")
    if span is not None and isinstance(previous, str):
        span.previous = previous
    return payload


def input_required_result(
    requests: dict[str, dict[str, Any]] | None, request_state: str | None
) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests:
        result["inputRequests"] = requests
    if request_state is not None:
        result["requestState"] = request_state
    return result
