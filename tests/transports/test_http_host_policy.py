"""Host/Origin policy and header parsing of the HTTP app, as plain functions: the answers
stay the same on repeated requests (the policy and each app's header reader keep small
caches of what they have seen), and what is remembered is bounded and belongs to one app."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest

from mcpkit import Server
from mcpkit.transports.http import McpHttpApp, asgi
from mcpkit.transports.http.asgi import REPEATED, HeaderReader, Scope, header_map
from mcpkit.transports.http.security import HostPolicy

CASES = [
    ("127.0.0.1:8000", True),
    ("LOCALHOST:8000", True),
    ("localhost", True),
    ("[::1]:8000", True),
    ("evil.example", False),
    ("evil.example:8000", False),
    ("localhost:80.evil.com", False),
    ("localhost:", False),
    ("127.0.0.1:x", False),
    ("", False),
    (None, False),
]


@pytest.mark.parametrize(("host", "ok"), CASES)
def test_host_answers_are_stable_across_requests(host: str | None, ok: bool) -> None:
    policy = HostPolicy.for_bind("127.0.0.1")
    assert [policy.host_ok(host) for _ in range(3)] == [ok, ok, ok]


def test_a_rejected_host_is_never_remembered_as_accepted() -> None:
    policy = HostPolicy.for_bind("127.0.0.1")
    for _ in range(3):
        assert not policy.host_ok("evil.example:8000")
        assert policy.host_ok("127.0.0.1:8000")


def test_replacing_the_allowed_hosts_forgets_earlier_answers() -> None:
    policy = HostPolicy.for_bind("127.0.0.1", ["api.example"])
    assert policy.host_ok("api.example:443")
    policy.allowed_hosts = frozenset({"localhost"})
    assert not policy.host_ok("api.example:443")
    assert policy.host_ok("localhost:1")


def test_many_distinct_hosts_are_all_answered() -> None:
    policy = HostPolicy.for_bind("127.0.0.1")
    assert all(policy.host_ok(f"127.0.0.1:{port}") for port in range(1000, 2000))
    assert not policy.host_ok("evil.example")


def test_header_map_lowercases_strips_and_flags_repeats() -> None:
    scope = {
        "headers": [
            (b"Host", b" 127.0.0.1 "),
            (b"MCP-Method", b"tools/call"),
            (b"mcp-method", b"tools/list"),
            (b"X-A", b"1"),
            (b"x-a", b"2"),
        ]
    }
    for _ in range(2):
        out = header_map(scope)
        assert out == {"host": "127.0.0.1", "mcp-method": REPEATED, "x-a": "2"}


def hostile_scope(i: int) -> Scope:
    """A request whose header names and (short) values were never seen before."""
    return {"headers": [(b"x-flood-%d" % i, b"v%d" % i), (b"host", b"h%d.example" % i)]}


def kept_by_asgi(read: Callable[[Scope], dict[str, str]], requests: int) -> int:
    """Bytes allocated in ``asgi.py`` while ``read`` maps ``requests`` hostile requests and
    still alive afterwards (what it remembered)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(requests):
            assert read(hostile_scope(i))["host"] == f"h{i}.example"
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    only_asgi = [tracemalloc.Filter(True, asgi.__file__)]
    grown = after.filter_traces(only_asgi).compare_to(before.filter_traces(only_asgi), "filename")
    return sum(stat.size_diff for stat in grown)


def test_header_map_keeps_nothing_of_the_requests_it_reads() -> None:
    assert kept_by_asgi(header_map, 2_000) < 1_000


def test_an_apps_header_reader_stays_bounded_under_a_flood() -> None:
    # 10,000 requests of new names and values: remembering them all would keep ~2 MB.
    assert kept_by_asgi(HeaderReader(limit=64), 10_000) < 40_000


def test_a_header_reader_answers_like_header_map_whatever_it_remembers() -> None:
    reader = HeaderReader(limit=4)
    scope = {
        "headers": [
            (b"Host", b" 127.0.0.1 "),
            (b"MCP-Method", b"tools/call"),
            (b"mcp-method", b"tools/list"),
            (b"x-a", b"1"),
        ]
    }
    for i in range(20):  # fills, empties and refills its tables
        flood = hostile_scope(i)
        assert reader(flood) == header_map(flood)
        assert (
            reader(scope)
            == header_map(scope)
            == {"host": "127.0.0.1", "mcp-method": REPEATED, "x-a": "1"}
        )


def test_two_apps_do_not_share_a_header_reader() -> None:
    first, second = McpHttpApp(Server("a")), McpHttpApp(Server("b"))
    assert first.read_headers is not second.read_headers
    kept_by_asgi(first.read_headers, 300)  # fills the first app's tables
    # The second app still remembers what it reads: nothing of the first's flood is its.
    assert kept_by_asgi(second.read_headers, 20) > 0
