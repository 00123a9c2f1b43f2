"""Request correlation, sans-IO: protocol/correlation."""

from __future__ import annotations

import pytest

from mcpkit.protocol.correlation import Incoming, Outgoing, cancelled_request_id


def response(request_id: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {}}


def test_ids_are_fresh_and_skip_ids_in_flight() -> None:
    out: Outgoing[str] = Outgoing()
    out.register(2, "x", "manual")
    first = out.next_id()
    out.register(first, "a", "w1")
    second = out.next_id()
    assert (first, second) == (1, 3)
    assert Outgoing[str](start=100).next_id() == 100


def test_register_refuses_an_id_in_flight() -> None:
    out: Outgoing[str] = Outgoing()
    out.register(1, "a", "w")
    with pytest.raises(ValueError):
        out.register(1, "b", "w2")
    first = out.resolve(response(1))
    assert first is not None and first.waiter == "w"  # the first is untouched


def test_resolve_routes_by_id_and_string_and_integer_ids_differ() -> None:
    out: Outgoing[str] = Outgoing()
    out.register(1, "int", "int-waiter")
    out.register("1", "str", "str-waiter")
    assert len(out) == 2 and 1 in out and "1" in out
    got = out.resolve(response("1"))
    assert got is not None and got.waiter == "str-waiter" and got.method == "str"
    got = out.resolve(response(1))
    assert got is not None and got.waiter == "int-waiter"
    assert len(out) == 0


@pytest.mark.parametrize("bad", [None, True, False, 99, "nope"])
def test_stray_responses_resolve_to_nothing(bad: object) -> None:
    out: Outgoing[str] = Outgoing()
    out.register(1, "a", "w")
    assert out.resolve(response(bad)) is None
    assert 1 in out


def test_each_response_is_delivered_once() -> None:
    out: Outgoing[str] = Outgoing()
    out.register(5, "a", "w")
    assert out.resolve(response(5)) is not None
    assert out.resolve(response(5)) is None


def test_forgotten_request_makes_a_late_answer_stray() -> None:
    out: Outgoing[str] = Outgoing()
    out.register(5, "a", "w", progress_token="tok")
    assert out.forget(5) is not None
    assert out.forget(5) is None
    assert out.resolve(response(5)) is None
    assert out.for_progress("tok") is None


def test_progress_tokens_map_back_to_their_request_until_it_ends() -> None:
    out: Outgoing[str] = Outgoing()
    out.register(1, "tools/call", "w1", progress_token="p")
    out.register(2, "tools/call", "w2", progress_token=42)
    got = out.for_progress("p")
    assert got is not None and got.request_id == 1
    got = out.for_progress(42)
    assert got is not None and got.request_id == 2
    assert out.for_progress("42") is None
    out.resolve(response(1))
    assert out.for_progress("p") is None


def test_drain_returns_everything_and_empties() -> None:
    out: Outgoing[str] = Outgoing()
    for i in range(3):
        out.register(out.next_id(), "m", f"w{i}", progress_token=f"t{i}")
    drained = out.drain()
    assert sorted(p.waiter for p in drained) == ["w0", "w1", "w2"]
    assert len(out) == 0 and out.for_progress("t0") is None
    assert out.drain() == []


def test_incoming_refuses_duplicates_while_in_flight() -> None:
    inc: Incoming[str] = Incoming()
    assert inc.start(1, "h1")
    assert not inc.start(1, "h1-dup")
    assert inc.start("1", "h-str")  # a different id
    assert inc.get(1) == "h1" and inc.get("1") == "h-str"
    assert inc.get(True) is None  # True == 1 in Python, but is not an id
    assert sorted(inc.all()) == ["h-str", "h1"] and len(inc) == 2
    inc.finish(1)
    inc.finish(1)  # idempotent
    assert inc.get(1) is None
    assert inc.start(1, "h1-again")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"requestId": 3}, 3),
        ({"requestId": "abc"}, "abc"),
        ({"requestId": 0}, 0),
        ({"requestId": True}, None),
        ({"requestId": None}, None),
        ({"requestId": 1.5}, None),
        ({"requestId": [1]}, None),
        ({}, None),
    ],
)
def test_cancelled_request_id(params: dict[str, object], expected: object) -> None:
    assert cancelled_request_id(params) == expected
