"""One policy point: whatever route a request takes into the gateway, it is named (App
names, prefixes), checked (headers against body, scopes, rules, limits) and audited in
one place, after every renaming; bodies are read within the body timeout; a refusal in
dispatch carries the request's ``id``.

Real processes over real HTTP: an upstream ``mcpkit serve`` of
``servers/admin_app.py`` (an MCP App with a ``ui://`` view, a ``secret_admin`` tool and a
``vault://`` resource), ``mcpkit gateway`` processes in front of it, and the test-double
authorization server of ``examples/auth`` in this process (it mints the callers'
tokens).  The slow-body cases serve a :class:`~mcpkit.gateway.app.GatewayApp` on a real
uvicorn in a thread, for a short body timeout of their own.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import gwkit
import httpx
import pytest

sys.path.insert(0, str(gwkit.ROOT / "tests" / "auth"))
from authkit import LocalAuthorizationServer

from mcpkit.auth.challenge import parse_challenges
from mcpkit.gateway.app import GatewayApp
from mcpkit.gateway.config import load_config
from mcpkit.gateway.middleware import FORBIDDEN
from mcpkit.transports.http import HttpOptions
from support.mcp import modern_headers
from support.servers import ThreadServer
from support.waits import eventually

APP = "tests/gateway/servers/admin_app.py"
BODY_TIMEOUT_S = 1.0
#: How long a raw socket waits for an answer: far above the body timeout, so a gateway
#: that never answers fails the test instead of hanging it.
ANSWER_WAIT_S = 20.0

RULES = """
[[rule]]
name = "vault-for-alice"
effect = "deny"
methods = ["resources/read"]
names = ["vault://*"]
principals = ["bob"]

[[rate_limit]]
name = "one-panel"
limit = "1/hour"
methods = ["tools/call"]
names = ["demo_panel"]
"""


@pytest.fixture(scope="module")
def upstream(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    demo = gwkit.start_upstream("demo", log_dir, APP)
    stack.append(demo)
    return demo


class Gateway:
    """A gateway process and where its audit lines go."""

    def __init__(self, proc: gwkit.Proc, audit: Path) -> None:
        self.proc = proc
        self.audit = audit

    @property
    def url(self) -> str:
        return self.proc.url

    def audit_lines(self) -> list[dict[str, Any]]:
        text = self.audit.read_text() if self.audit.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def scoped(
    authz: LocalAuthorizationServer, upstream: gwkit.Proc, log_dir: Path, stack: list[gwkit.Proc]
) -> Gateway:
    """``jwt`` auth with ``[auth.tool_scopes]`` on the App upstream's admin tool."""
    port = gwkit.free_port()
    audit = log_dir / "scoped-audit.jsonl"
    config = (
        f"""
[gateway]
state = "memory:"
audit_log = "{audit}"

[auth]
mode = "jwt"
issuer = "{authz.issuer}"
resource = "http://127.0.0.1:{port}/mcp"
scopes = ["mcp"]
[auth.tool_scopes]
demo_secret_admin = ["admin"]
"""
        + RULES
        + gwkit.toml_upstream("demo", url=upstream.url, prefix="demo_")
    )
    proc = gwkit.start_gateway("scoped", log_dir, config, port=port)
    stack.append(proc)
    return Gateway(proc, audit)


@pytest.fixture(scope="module")
def plain(upstream: gwkit.Proc, log_dir: Path, stack: list[gwkit.Proc]) -> Gateway:
    """Static bearer tokens, no tool scopes."""
    audit = log_dir / "plain-audit.jsonl"
    config = f"""
[gateway]
state = "memory:"
audit_log = "{audit}"

[auth]
mode = "bearer"
[auth.tokens]
"token-bob" = "bob"
""" + gwkit.toml_upstream("demo", url=upstream.url, prefix="demo_")
    proc = gwkit.start_gateway("plain", log_dir, config)
    stack.append(proc)
    return Gateway(proc, audit)


def token(authz: LocalAuthorizationServer, gateway: Gateway, who: str, scope: str) -> str:
    return authz.mint(subject=who, audience=gateway.url, scope=scope)


# ---------------------------------------------------------------------------- scopes


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_tool_scopes_hold_for_an_apps_unprefixed_name(
    scoped: Gateway, authz: LocalAuthorizationServer, era: str
) -> None:
    bob = token(authz, scoped, "bob", "mcp")
    for name in ("demo_secret_admin", "secret_admin"):
        before = len(scoped.audit_lines())
        if era == "modern":
            reply = gwkit.call(scoped.url, "tools/call", {"name": name}, token=bob)
        else:
            session = gwkit.LegacySession(scoped.url, token=bob)
            assert session.initialize().status == 200
            reply = session.request("tools/call", {"name": name})
            session.close()
        assert reply.status == 403, (name, reply.body)
        assert "admin secret" not in json.dumps(reply.body)
        (challenge,) = parse_challenges(reply.headers["www-authenticate"])
        assert challenge.error == "insufficient_scope"
        assert challenge.scopes == ["mcp", "admin"]
        # The audit line names the tool as the policy saw it: the resolved name.
        since = partial(_calls_since, scoped, before)
        line = eventually(since, 10, "the refusal's audit line")[-1]
        assert line["principal"] == "bob"
        assert line["name"] == "demo_secret_admin"
        assert line["outcome"] == "insufficient_scope"
    admin = token(authz, scoped, "alice", "mcp admin")
    for name in ("demo_secret_admin", "secret_admin"):
        reply = gwkit.call(scoped.url, "tools/call", {"name": name}, token=admin)
        assert reply.text() == "the admin secret"


def _calls_since(gateway: Gateway, before: int) -> list[dict[str, Any]]:
    return [e for e in gateway.audit_lines()[before:] if e["method"] == "tools/call"]


# ---------------------------------------------------------------------------- headers


def test_a_header_body_mismatch_is_refused_with_and_without_tool_scopes(
    scoped: Gateway, plain: Gateway, authz: LocalAuthorizationServer
) -> None:
    tokens = {
        "scoped": token(authz, scoped, "alice", "mcp admin"),
        "plain": "token-bob",
    }
    for label, gateway in (("scoped", scoped), ("plain", plain)):
        good = gwkit.call(gateway.url, "tools/call", {"name": "demo_panel"}, token=tokens[label])
        assert good.status in (200, 429), (label, good.body)  # (panel is rate limited)
        for spoofed in ("demo_secret_admin", "demo_nothing"):
            reply = gwkit.call(
                gateway.url,
                "tools/call",
                {"name": "demo_panel"},
                token=tokens[label],
                header_name=spoofed,
            )
            assert reply.status == 400, (label, spoofed, reply.body)
            assert reply.error["code"] == -32020
            assert reply.body["id"] is not None


# ---------------------------------------------------------------------------- ids


def _raw_post(url: str, body: dict[str, Any], **headers: str | None) -> httpx.Response:
    return httpx.post(url, headers=modern_headers(body, **headers), content=json.dumps(body))


def _tools_call(name: str, request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "_meta": gwkit.meta()},
    }


def test_refusals_in_dispatch_carry_the_request_id(
    scoped: Gateway, plain: Gateway, authz: LocalAuthorizationServer
) -> None:
    """A rule, a missing scope or a rate limit refuses a request in dispatch, where its id
    is known: the answer carries it, on both eras.  Answered before the body is read (no
    token, a bad token, a foreign Origin, a body over the limit) the id cannot be known:
    the answer has no ``id`` member, as the MCP schema has it (``RequestId`` is a string
    or an integer, never null)."""
    message = _tools_call("demo_panel", 41)
    for era_headers in ({}, {"Mcp-Method": None, "Mcp-Name": None, "MCP-Protocol-Version": None}):
        for gateway in (scoped, plain):
            unauthenticated = _raw_post(gateway.url, message, **era_headers)
            assert unauthenticated.status_code == 401
            assert "id" not in unauthenticated.json(), unauthenticated.json()
            bad = _raw_post(gateway.url, message, Authorization="Bearer nope", **era_headers)
            assert bad.status_code == 401 and "id" not in bad.json()
            foreign = _raw_post(gateway.url, message, Origin="http://evil.example", **era_headers)
            assert foreign.status_code == 403 and "id" not in foreign.json()
    huge = _tools_call("demo_panel", 42)
    huge["params"]["arguments"] = {"pad": "x" * (5 * 1024 * 1024)}
    too_large = _raw_post(plain.url, huge, Authorization="Bearer token-bob")
    assert too_large.status_code == 413 and "id" not in too_large.json()
    bob = token(authz, scoped, "bob", "mcp")
    for name, status in (("demo_secret_admin", 403), ("demo_panel", 200), ("demo_panel", 429)):
        reply = _raw_post(scoped.url, _tools_call(name, 43), Authorization=f"Bearer {bob}")
        assert reply.status_code == status, (name, reply.text)
        assert reply.json()["id"] == 43
    denied = _raw_post(
        scoped.url,
        {
            "jsonrpc": "2.0",
            "id": 44,
            "method": "resources/read",
            "params": {"uri": "vault://demo/secret", "_meta": gwkit.meta()},
        },
        Authorization=f"Bearer {bob}",
    )
    assert denied.status_code == 403 and denied.json()["id"] == 44
    session = gwkit.LegacySession(scoped.url, token=bob)
    assert session.initialize().status == 200
    legacy = gwkit._reply(
        session.post(
            {"jsonrpc": "2.0", "id": 45, "method": "tools/call", "params": {"name": "secret_admin"}}
        )
    )
    session.close()
    assert legacy.status == 403 and legacy.body["id"] == 45


# ---------------------------------------------------------------------------- listen


def _listen(url: str, bearer: str, uris: list[str]) -> tuple[int, list[dict[str, Any]]]:
    """Open a listen stream on ``uris``; the status and the messages up to the
    acknowledgement (or the one error answer)."""
    body = {
        "jsonrpc": "2.0",
        "id": 51,
        "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": uris}, "_meta": gwkit.meta()},
    }
    headers = modern_headers(body, Authorization=f"Bearer {bearer}")
    messages: list[dict[str, Any]] = []
    with httpx.stream(
        "POST", url, headers=headers, content=json.dumps(body), timeout=ANSWER_WAIT_S
    ) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            response.read()
            return response.status_code, [response.json()]
        for line in response.iter_lines():
            if line.startswith("data:"):
                messages.append(json.loads(line[5:]))
                if messages[-1].get("method") == "notifications/subscriptions/acknowledged":
                    break
    return response.status_code, messages


def test_a_listen_on_a_uri_a_rule_denies_is_refused_and_audited(
    scoped: Gateway, authz: LocalAuthorizationServer
) -> None:
    bob = token(authz, scoped, "bob", "mcp")
    read = gwkit.call(scoped.url, "resources/read", {"uri": "vault://demo/secret"}, token=bob)
    assert read.status == 403  # the rule, on a read
    before = len(scoped.audit_lines())
    status, messages = _listen(scoped.url, bob, ["open://demo/notes", "vault://demo/secret"])
    assert status == 403, messages
    (answer,) = messages
    assert answer["id"] == 51
    assert answer["error"]["code"] == read.error["code"]
    assert "vault://demo/secret" in answer["error"]["message"]
    lines = eventually(
        lambda: [e for e in scoped.audit_lines()[before:] if e["outcome"] == "denied"],
        10,
        "the listen's audit line",
    )
    assert lines[-1]["principal"] == "bob"
    assert lines[-1]["method"] == "subscriptions/listen"
    assert lines[-1]["name"] == "vault://demo/secret"
    assert lines[-1]["rule"] == "vault-for-alice"
    # What the rule allows is listened to as before.
    status, messages = _listen(scoped.url, bob, ["open://demo/notes"])
    assert status == 200
    acknowledged = messages[-1]["params"]["notifications"]
    assert acknowledged["resourceSubscriptions"] == ["open://demo/notes"]
    alice = token(authz, scoped, "alice", "mcp")
    status, _ = _listen(scoped.url, alice, ["vault://demo/secret"])
    assert status == 200


# ---------------------------------------------------------------------------- bodies


@pytest.fixture(scope="module")
def slow_front(upstream: gwkit.Proc, log_dir: Path) -> Iterator[ThreadServer]:
    """A gateway app with a short body timeout, on a real uvicorn in this process."""
    path = log_dir / "slow.toml"
    path.write_text(
        '[gateway]\nstate = "memory:"\n[auth]\nmode = "bearer"\n[auth.tokens]\n"t-bob" = "bob"\n'
        + gwkit.toml_upstream("demo", url=upstream.url, prefix="demo_")
    )
    app = GatewayApp(load_config(path), HttpOptions(body_timeout_s=BODY_TIMEOUT_S))
    with ThreadServer(app) as served:
        yield served


def _slow_post(port: int, headers: dict[str, str]) -> bytes:
    """A POST announcing 1000 bytes of body and sending one a second; what came back
    once the gateway answered (or closed), never more than ``ANSWER_WAIT_S`` later."""
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WAIT_S) as sock:
        sock.sendall(
            (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: 1000\r\n{head}\r\n"
            ).encode()
        )
        sock.settimeout(1.0)  # one byte a second, until an answer arrives
        received = b""
        for _ in range(int(ANSWER_WAIT_S)):
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break  # (the server closed on the unread body it refused: the answer came first)
            except TimeoutError:
                if b"\r\n\r\n" in received:
                    break  # (the answer's head came, its body is not coming)
                try:
                    sock.sendall(b"{")
                except OSError:
                    break
                continue
            if not chunk:
                break
            received += chunk
        return received


@pytest.mark.parametrize("bearer", [None, "t-bob"])
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_slow_body_gets_408_within_the_body_timeout(
    slow_front: ThreadServer, bearer: str | None, era: str
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if era == "modern":
        headers.update(
            {"MCP-Protocol-Version": gwkit.MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "x"}
        )
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    answer = _slow_post(slow_front.port, headers)
    status_line = answer.split(b"\r\n", 1)[0]
    if bearer is None and era == "modern":
        # The headers say enough to refuse at once: 401 before any body is read.
        assert status_line.startswith(b"HTTP/1.1 401"), answer
    else:
        assert status_line.startswith(b"HTTP/1.1 408"), answer


# ---------------------------------------------------------------------------- no rules


@pytest.fixture(scope="module")
def closed_front(upstream: gwkit.Proc, log_dir: Path) -> Iterator[ThreadServer]:
    """A gateway with ``default_effect = "deny"`` and no rule, on a real uvicorn."""
    path = log_dir / "closed.toml"
    path.write_text(
        'default_effect = "deny"\n[gateway]\nstate = "memory:"\n'
        + gwkit.toml_upstream("demo", url=upstream.url, prefix="demo_")
    )
    with ThreadServer(GatewayApp(load_config(path), HttpOptions())) as served:
        yield served


def test_default_deny_without_rules_refuses_every_routed_request(
    closed_front: ThreadServer,
) -> None:
    """The policy point skips the access check only when no rule or view can refuse (no
    rule, ``default_effect = "allow"``): with ``deny`` and no rule, lists and calls are
    refused as forbidden, with their ids."""
    url = closed_front.url
    listing = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {"_meta": gwkit.meta()},
    }
    for message in (listing, _tools_call("demo_panel", 2), listing, _tools_call("demo_panel", 3)):
        reply = _raw_post(url, message)
        assert reply.status_code == 403, reply.text
        assert reply.json()["error"]["code"] == FORBIDDEN, reply.text
        assert reply.json()["id"] == message["id"]
