"""The legacy session lifecycle as a state table: protocol/lifecycle."""

from __future__ import annotations

import itertools

import pytest

from mcpkit.protocol.lifecycle import TRANSITIONS, Event, Lifecycle, SessionState, event_for
from mcpkit.types.errors import INVALID_REQUEST, McpError

S, E = SessionState, Event

#: Our own statement of the rules (2025-11-25 lifecycle), independent of the table in src.
ALLOWED = {
    (S.NEW, E.INITIALIZE): S.INITIALIZING,
    (S.NEW, E.PING): S.NEW,
    (S.NEW, E.CLOSE): S.CLOSED,
    (S.INITIALIZING, E.INITIALIZED): S.READY,
    (S.INITIALIZING, E.PING): S.INITIALIZING,
    (S.INITIALIZING, E.REQUEST): S.READY,  # pipelined requests are tolerated
    (S.INITIALIZING, E.NOTIFICATION): S.INITIALIZING,
    (S.INITIALIZING, E.CLOSE): S.CLOSED,
    (S.READY, E.INITIALIZED): S.READY,
    (S.READY, E.PING): S.READY,
    (S.READY, E.REQUEST): S.READY,
    (S.READY, E.NOTIFICATION): S.READY,
    (S.READY, E.CLOSE): S.CLOSED,
    (S.CLOSED, E.CLOSE): S.CLOSED,
}
ALL_PAIRS = list(itertools.product(SessionState, Event))
REFUSED = [pair for pair in ALL_PAIRS if pair not in ALLOWED]


def at(state: SessionState) -> Lifecycle:
    lifecycle = Lifecycle()
    lifecycle.state = state
    return lifecycle


def test_table_is_exactly_the_rules() -> None:
    assert dict(TRANSITIONS) == ALLOWED


@pytest.mark.parametrize(("state", "event"), list(ALLOWED), ids=lambda v: v.value)
def test_allowed_transition(state: SessionState, event: Event) -> None:
    lifecycle = at(state)
    assert lifecycle.can(event)
    assert lifecycle.advance(event) is ALLOWED[(state, event)]
    assert lifecycle.state is ALLOWED[(state, event)]


@pytest.mark.parametrize(("state", "event"), REFUSED, ids=lambda v: v.value)
def test_refused_transition_raises_invalid_request_and_keeps_state(
    state: SessionState, event: Event
) -> None:
    lifecycle = at(state)
    assert not lifecycle.can(event)
    with pytest.raises(McpError) as info:
        lifecycle.advance(event)
    assert info.value.code == INVALID_REQUEST
    assert lifecycle.state is state


@pytest.mark.parametrize(
    ("state", "event", "words"),
    [
        (S.NEW, E.REQUEST, "not initialized"),
        (S.NEW, E.NOTIFICATION, "not initialized"),
        (S.INITIALIZING, E.INITIALIZE, "already initialized"),
        (S.READY, E.INITIALIZE, "already initialized"),
        (S.CLOSED, E.REQUEST, "closed"),
        (S.CLOSED, E.PING, "closed"),
    ],
)
def test_refusals_say_what_is_wrong(state: SessionState, event: Event, words: str) -> None:
    with pytest.raises(McpError) as info:
        at(state).advance(event)
    assert words in info.value.message.lower()


def test_a_whole_session() -> None:
    lifecycle = Lifecycle()
    assert lifecycle.state is S.NEW
    for event, state in [
        (E.PING, S.NEW),
        (E.INITIALIZE, S.INITIALIZING),
        (E.INITIALIZED, S.READY),
        (E.REQUEST, S.READY),
        (E.NOTIFICATION, S.READY),
        (E.CLOSE, S.CLOSED),
    ]:
        assert lifecycle.advance(event) is state


@pytest.mark.parametrize(
    ("method", "is_request", "event"),
    [
        ("initialize", True, E.INITIALIZE),
        ("notifications/initialized", False, E.INITIALIZED),
        ("ping", True, E.PING),
        ("tools/list", True, E.REQUEST),
        ("tools/call", True, E.REQUEST),
        ("notifications/cancelled", False, E.NOTIFICATION),
        ("notifications/roots/list_changed", False, E.NOTIFICATION),
    ],
)
def test_event_for(method: str, is_request: bool, event: Event) -> None:
    assert event_for(method, is_request) is event
