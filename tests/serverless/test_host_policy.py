"""The serverless Host allow-list: platform suffixes, loopback, configured names, and '*'."""

from __future__ import annotations

import pytest

from mcpkit.serverless import ServerlessError
from mcpkit.serverless.mode import AWS_SUFFIXES, host_policy


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("abc.lambda-url.us-east-1.on.aws", True),
        ("abc.execute-api.eu-west-1.amazonaws.com", True),
        ("abc.execute-api.eu-west-1.amazonaws.com:443", True),
        ("localhost:8080", True),
        ("127.0.0.1", True),
        ("on.aws", False),  # the suffix alone is no host of the platform's
        ("evil-on.aws", False),
        ("abc.on.aws:80.evil.com", False),  # a port that is not a number
        ("abc.on.aws.evil.com", False),
        ("[::1].on.aws", False),
        ("mcp.example.com", False),
        ("", False),
    ],
)
def test_default_allow_list(host: str, ok: bool) -> None:
    assert host_policy(AWS_SUFFIXES, allowed_hosts=[]).host_ok(host) is ok


def test_configured_names_and_suffixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPKIT_ALLOWED_HOSTS", "mcp.example.com,*.corp.example")
    policy = host_policy(AWS_SUFFIXES)
    assert policy.host_ok("mcp.example.com")
    assert policy.host_ok("a.b.corp.example")
    assert not policy.host_ok("corp.example")
    assert not policy.host_ok("other.example.com")


def test_star_turns_the_check_off_explicitly() -> None:
    policy = host_policy(AWS_SUFFIXES, allowed_hosts=["*"])
    assert policy.allowed_hosts is None
    assert policy.host_ok("anything.example")


def test_origins_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPKIT_ALLOWED_ORIGINS", "https://app.example.com")
    policy = host_policy(AWS_SUFFIXES, allowed_hosts=[])
    assert policy.origin_ok("https://app.example.com")
    assert not policy.origin_ok("https://other.lambda-url.us-east-1.on.aws")


def test_a_wildcard_in_the_middle_is_refused() -> None:
    with pytest.raises(ServerlessError, match=r"use an exact name, '\*.domain'"):
        host_policy(AWS_SUFFIXES, allowed_hosts=["mcp.*.example.com"])
