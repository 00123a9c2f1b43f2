"""Host/Origin policy and header parsing of the HTTP app, as plain functions: the answers
stay the same on repeated requests (both keep small caches of what they have seen)."""

from __future__ import annotations

import pytest

from mcpkit.transports.http.asgi import REPEATED, header_map
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
