"""Authentication (JWT against a JWKS file), allow/deny rules, rate limits, the audit log
and /metrics, over real HTTP against a gateway process fronting the conformance fixture.

Policy under test (see ``CONFIG``): every ``tools/call`` of ``test_error_handling`` is
denied; ``mallory`` may not call ``greet``; ``greet`` is limited to 3 calls per minute per
principal.  Each test uses principals of its own so that budgets do not leak between tests.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gwkit
import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

ISSUER = "https://idp.gateway-tests.invalid/"
AUDIENCE = "mcpkit-gateway-tests"
LIMIT = 3
RULE = "greet-per-user"

CONFIG = """
default_effect = "allow"

[gateway]
state = "memory:"
audit_log = "{audit}"

[auth]
mode = "jwt"
jwks_file = "{jwks}"
issuer = "{issuer}"
audience = "{audience}"
resource = "https://gateway-tests.invalid/mcp"

[[rule]]
effect = "deny"
methods = ["tools/call"]
names = ["test_error_handling"]

[[rule]]
effect = "deny"
principals = ["mallory"]
methods = ["tools/call"]
names = ["greet"]

[[rate_limit]]
name = "{rule}"
limit = "{limit}/minute"
methods = ["tools/call"]
names = ["greet"]
"""

Minter = Callable[..., str]


@pytest.fixture(scope="module")
def signing_key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "test-key"})


@pytest.fixture(scope="module")
def mint(signing_key: RSAKey) -> Minter:
    def make(sub: str, *, expires_in: int = 300, key: RSAKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        body = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + expires_in}
        body.update(claims)
        signer = key or signing_key
        return jwt.encode({"alg": "RS256", "kid": signer.kid}, body, signer)

    return make


@pytest.fixture(scope="module")
def gateway(log_dir: Path, stack: list[gwkit.Proc], signing_key: RSAKey) -> gwkit.Proc:
    jwks = log_dir / "jwks.json"
    jwks.write_text(json.dumps({"keys": [signing_key.as_dict(private=False)]}))
    upstream = gwkit.start_upstream("fixture", log_dir, gwkit.CONFORMANCE)
    stack.append(upstream)
    config = CONFIG.format(
        audit=log_dir / "audit.jsonl",
        jwks=jwks,
        issuer=ISSUER,
        audience=AUDIENCE,
        rule=RULE,
        limit=LIMIT,
    ) + gwkit.toml_upstream("fixture", url=upstream.url)
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


def audit(log_dir: Path) -> list[dict[str, Any]]:
    lines = (log_dir / "audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def greet(gateway: gwkit.Proc, token: str, **kw: Any) -> gwkit.Reply:
    params = {"name": "greet", "arguments": {"name": "x"}}
    return gwkit.call(gateway.url, "tools/call", params, token=token, **kw)


# ---------------------------------------------------------------------------- authentication


def _assert_401(reply: gwkit.Reply, error: str) -> None:
    assert reply.status == 401, reply.body
    challenge = reply.headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer "), challenge
    assert f'error="{error}"' in challenge, challenge
    assert reply.error["code"] == -31001


def _assert_login_challenge(reply: gwkit.Reply) -> None:
    """No token: a plain challenge (RFC 6750 §3.1: no error code) that says where the
    protected-resource metadata is (RFC 9728 §5.1), as the MCP authorization spec wants."""
    assert reply.status == 401, reply.body
    challenge = reply.headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer "), challenge
    assert "error=" not in challenge, challenge
    metadata = "https://gateway-tests.invalid/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata}"' in challenge, challenge
    assert reply.error["code"] == -31001


def test_missing_token_is_401(gateway: gwkit.Proc) -> None:
    _assert_login_challenge(gwkit.call(gateway.url, "tools/list"))
    # A legacy client's initialize (no Mcp-Method header to go by) is refused the same way.
    session = gwkit.LegacySession(gateway.url)
    try:
        _assert_login_challenge(session.initialize())
    finally:
        session.close()


def _unsigned(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def test_foreign_origin_is_403_before_any_token_is_looked_at(gateway: gwkit.Proc) -> None:
    reply = gwkit.call(gateway.url, "tools/list", headers={"origin": "https://evil.example"})
    assert reply.status == 403, reply.body


def test_invalid_tokens_are_401(gateway: gwkit.Proc, mint: Minter) -> None:
    stranger = RSAKey.generate_key(2048, parameters={"kid": "test-key"})
    now = int(time.time())
    for token in (
        "not-a-jwt",
        _unsigned({"sub": "eve", "iss": ISSUER, "aud": AUDIENCE, "exp": now + 300}),
        mint("eve", key=stranger),  # right kid, wrong key
        mint("eve", aud="someone-else"),
        mint("eve", iss="https://evil.invalid/"),
    ):
        reply = gwkit.call(gateway.url, "tools/list", token=token)
        _assert_401(reply, "invalid_token")


def test_expired_token_is_401(gateway: gwkit.Proc, mint: Minter) -> None:
    reply = gwkit.call(gateway.url, "tools/list", token=mint("erin", expires_in=-120))
    _assert_401(reply, "invalid_token")
    assert "expired" in reply.headers["www-authenticate"]


def test_valid_token_lists_only_what_is_allowed(gateway: gwkit.Proc, mint: Minter) -> None:
    reply = gwkit.call(gateway.url, "tools/list", token=mint("alice"))
    tools = [t["name"] for t in reply.result["tools"]]
    assert "greet" in tools and "test_simple_text" in tools
    assert "test_error_handling" not in tools  # denied to everyone: not even listed
    assert reply.result["cacheScope"] == "private"  # the list depends on who asks
    mallory = gwkit.call(gateway.url, "tools/list", token=mint("mallory")).result
    assert "greet" not in [t["name"] for t in mallory["tools"]]


# ---------------------------------------------------------------------------- authorization


def test_denied_tool_is_403(gateway: gwkit.Proc, mint: Minter) -> None:
    reply = gwkit.call(
        gateway.url, "tools/call", {"name": "test_error_handling"}, token=mint("alice")
    )
    assert reply.status == 403 and reply.error["code"] == -31003, reply.body
    assert greet(gateway, mint("mallory")).error["code"] == -31003
    # Legacy clients send no Mcp-Name: the dispatcher decides on the body, same answer.
    session = gwkit.LegacySession(gateway.url, token=mint("mallory"))
    try:
        session.initialize()
        legacy = session.request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
    finally:
        session.close()
    assert legacy.status == 403 and legacy.error["code"] == -31003, legacy.body


# ---------------------------------------------------------------------------- rate limits


def test_call_over_the_limit_is_429_and_nothing_else_is(gateway: gwkit.Proc, mint: Minter) -> None:
    alice, bob = mint("rl-alice"), mint("rl-bob")
    for _ in range(LIMIT):
        assert greet(gateway, alice).text() == "Hello, x!"
    over = greet(gateway, alice)
    assert over.status == 429, over.body
    assert over.error["code"] == -31029
    assert over.error["data"]["rule"] == RULE
    retry_after = int(over.headers["retry-after"])
    assert 1 <= retry_after <= 60
    # Other methods, other tools and other principals keep their budgets.
    assert gwkit.call(gateway.url, "tools/list", token=alice).status == 200
    other = gwkit.call(gateway.url, "tools/call", {"name": "test_simple_text"}, token=alice)
    assert other.status == 200
    assert greet(gateway, bob).text() == "Hello, x!"
    assert greet(gateway, alice).status == 429  # still over


def test_legacy_client_over_the_limit_gets_429_with_retry_after(
    gateway: gwkit.Proc, mint: Minter
) -> None:
    session = gwkit.LegacySession(gateway.url, token=mint("rl-dave"))
    try:
        session.initialize()
        for _ in range(LIMIT):
            ok = session.request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
            assert ok.text() == "Hello, x!"
        over = session.request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
    finally:
        session.close()
    assert over.status == 429 and over.error["code"] == -31029, over.body
    assert int(over.headers["retry-after"]) >= 1


def test_spoofed_mcp_name_is_rejected_and_not_counted(gateway: gwkit.Proc, mint: Minter) -> None:
    carol = mint("rl-carol")
    for _ in range(LIMIT + 2):
        # The header claims an unlimited tool; the body calls the limited one.
        hidden = greet(gateway, carol, header_name="test_simple_text")
        assert hidden.status == 400 and hidden.error["code"] == -32020, hidden.body
        # The header claims the limited tool; the body calls another one.
        framed = gwkit.call(
            gateway.url,
            "tools/call",
            {"name": "test_simple_text"},
            token=carol,
            header_name="greet",
        )
        assert framed.status == 400 and framed.error["code"] == -32020, framed.body
    for _ in range(LIMIT):  # the whole budget is still there
        assert greet(gateway, carol).text() == "Hello, x!"
    assert greet(gateway, carol).status == 429


# ---------------------------------------------------------------------------- audit, metrics


def test_audit_log_records_each_outcome(gateway: gwkit.Proc, mint: Minter, log_dir: Path) -> None:
    gwkit.call(gateway.url, "tools/list")  # 401
    gwkit.call(gateway.url, "tools/list", token="garbage")  # 401
    session = gwkit.LegacySession(gateway.url)  # a legacy initialize without a token: 401
    try:
        _assert_login_challenge(session.initialize())
    finally:
        session.close()
    gwkit.call(gateway.url, "tools/call", {"name": "test_error_handling"}, token=mint("audit-a"))
    frank = mint("audit-frank")
    for _ in range(LIMIT + 1):
        greet(gateway, frank)
    entries = audit(log_dir)
    fields = {"time", "principal", "method", "name", "upstream", "outcome", "latency_ms"}
    for entry in entries:
        assert fields <= set(entry), entry
        assert entry["time"].endswith("Z") and isinstance(entry["latency_ms"], (int, float))
    unauthenticated = [e for e in entries if e["outcome"] == "unauthenticated"]
    assert len(unauthenticated) >= 2
    assert all(e["principal"] is None for e in unauthenticated)
    assert any(e["method"] == "tools/list" for e in unauthenticated)
    # The legacy initialize refused above is there with its method.
    assert any(e["method"] == "initialize" for e in unauthenticated)
    denied = [e for e in entries if e["outcome"] == "denied" and e["principal"] == "audit-a"]
    assert [(e["method"], e["name"]) for e in denied] == [("tools/call", "test_error_handling")]
    frank_entries = [e for e in entries if e["principal"] == "audit-frank"]
    assert [e["outcome"] for e in frank_entries] == ["ok"] * LIMIT + [f"rate_limited:{RULE}"]
    assert all(e["name"] == "greet" for e in frank_entries)
    assert [e["upstream"] for e in frank_entries] == ["fixture"] * LIMIT + [None]


def test_metrics_expose_counters(gateway: gwkit.Proc, mint: Minter) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    gwkit.call(gateway.url, "tools/call", {"name": "test_simple_text"}, token=mint("metrics"))
    response = httpx.get(gateway.base + "/metrics", timeout=10)
    assert response.status_code == 200
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    def value(name: str, **labels: str) -> float:
        return sum(
            v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)
        )

    total = "mcp_gateway_requests_total"
    assert value(total, method="tools/call", upstream="fixture", outcome="ok") >= 1
    assert value(total, method="tools/call", outcome="denied") >= 1
    assert value(total, method="tools/call", outcome="rate_limited") >= 1
    assert value(total, outcome="unauthenticated") >= 1
    assert value("mcp_gateway_rate_limited_total", rule=RULE) >= 1
    assert value("mcp_gateway_request_seconds_count", method="tools/call") >= 1
