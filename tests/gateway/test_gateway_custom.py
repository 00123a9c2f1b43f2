"""An extension's custom methods through the gateway, over real HTTP: two upstreams of
``tests/gateway/servers/vendor.py``, one speaking 2026-07-28 only (extension
``com.example/modern``, configured by identifier) and one 2025-11-25 only
(``com.example/legacy``, configured by method name): the wire never lists custom methods.
A ``[[rule]]`` on the methods lets alice call them and refuses mallory; both are audited.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import gwkit
import pytest

from mcpkit.client import Client
from mcpkit.types.versions import EraChoice
from support.waits import eventually

VENDOR = "tests/gateway/servers/vendor.py"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
ALICE, MALLORY = "tok-alice-0123456789", "tok-mallory-0123456789"
BOB = "tok-bob-0123456789"

CONFIG = """
default_effect = "allow"

[gateway]
state = "memory:"
audit_log = "{audit}"

[auth]
mode = "bearer"

[auth.tokens]
"{alice}" = {{ principal = "alice" }}
"{mallory}" = {{ principal = "mallory" }}
"{bob}" = {{ principal = "bob" }}

[[rule]]
name = "no-probes-for-mallory"
effect = "deny"
principals = ["mallory"]
methods = ["com.example/*"]

{upstreams}
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[gwkit.Proc, Path]]:
    logs = tmp_path_factory.mktemp("custom")
    modern = gwkit.spawn_upstream(
        "modern", logs, VENDOR, "--no-legacy", VENDOR_EXTENSION="com.example/modern"
    )
    legacy = gwkit.spawn_upstream(
        "legacy", logs, VENDOR, "--no-modern", VENDOR_EXTENSION="com.example/legacy"
    )
    for upstream in (modern, legacy):
        gwkit.wait_port(upstream)
    upstreams = gwkit.toml_upstream(
        "modern", url=modern.url, prefix="m_", extensions=["com.example/modern"]
    ) + gwkit.toml_upstream(
        "legacy",
        url=legacy.url,
        prefix="l_",
        era="legacy",
        methods=[f"com.example/legacy/{m}" for m in ("echo", "steps", "step")],
    )
    audit = logs / "audit.jsonl"
    config = CONFIG.format(alice=ALICE, mallory=MALLORY, bob=BOB, upstreams=upstreams, audit=audit)
    gw = gwkit.start_gateway("gw", logs, config)
    try:
        yield gw, audit
    finally:
        for proc in (gw, modern, legacy):
            proc.stop()


def _audit(path: Path, method: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if line.get("method") == method]


def _forwarded(gw: gwkit.Proc, audit: Path, method: str, upstream: str, era: str) -> None:
    params = {"text": "figs", "count": 2}
    allowed = gwkit.call(gw.url, method, params, token=ALICE)
    assert allowed.status == 200, allowed.body
    answer = {k: v for k, v in allowed.result.items() if k not in ("_meta", "resultType")}
    assert answer == {"upstream": upstream, "era": era, "params": params}
    assert allowed.result["_meta"][SERVER_INFO]["name"] == "mcpkit-gateway"  # the front's
    refused = gwkit.call(gw.url, method, params, token=MALLORY)
    assert refused.status == 403, refused.body
    assert refused.error["code"] == -31003 and "mallory" in refused.error["message"]
    outcomes = [(e["principal"], e["outcome"], e.get("rule")) for e in _audit(audit, method)]
    assert outcomes == [("alice", "ok", None), ("mallory", "denied", "no-probes-for-mallory")]


def test_a_custom_method_is_forwarded_to_a_modern_upstream_under_policy(
    gateway: tuple[gwkit.Proc, Path],
) -> None:
    _forwarded(*gateway, "com.example/modern/echo", "modern", "modern")


def test_a_custom_method_is_forwarded_to_a_legacy_upstream_under_policy(
    gateway: tuple[gwkit.Proc, Path],
) -> None:
    _forwarded(*gateway, "com.example/legacy/echo", "legacy", "legacy")


def test_the_upstream_error_is_the_callers(gateway: tuple[gwkit.Proc, Path]) -> None:
    gw, _ = gateway
    reply = gwkit.call(gw.url, "com.example/modern/fail", {}, token=ALICE)
    assert reply.error["code"] == -32602, reply.body
    assert reply.error["data"] == {"upstream": "modern"}


def test_a_method_the_file_does_not_name_is_not_found(gateway: tuple[gwkit.Proc, Path]) -> None:
    gw, _ = gateway
    # The legacy upstream serves .../fail, but the file names only .../echo of it.
    for method in ("com.example/legacy/fail", "com.other/thing/do"):
        reply = gwkit.call(gw.url, method, {}, token=ALICE)
        assert reply.error["code"] == -32601, reply.body


def test_the_gateway_declares_the_forwarded_extensions(gateway: tuple[gwkit.Proc, Path]) -> None:
    gw, _ = gateway
    found = gwkit.call(gw.url, "server/discover", {}, token=ALICE)
    extensions = found.result["capabilities"]["extensions"]
    assert extensions["com.example/modern"] == {"upstream": "modern"}
    assert extensions["com.example/legacy"] == {}  # (2025-11-25 declares no extensions)


@pytest.mark.parametrize(
    ("method", "upstream"),
    [("com.example/modern/echo", "modern"), ("com.example/legacy/echo", "legacy")],
)
def test_a_legacy_caller_calls_a_custom_method(
    gateway: tuple[gwkit.Proc, Path], method: str, upstream: str
) -> None:
    gw, _ = gateway
    session = gwkit.LegacySession(gw.url, token=ALICE)
    try:
        session.initialize()
        reply = session.request(method, {"text": "old"})
        assert reply.result["upstream"] == upstream, reply.body
        assert reply.result["params"] == {"text": "old", "count": 0}
    finally:
        session.close()


def test_a_reload_changes_what_is_forwarded(tmp_path_factory: pytest.TempPathFactory) -> None:
    logs = tmp_path_factory.mktemp("custom-reload")
    upstream = gwkit.start_upstream("probe", logs, VENDOR)
    plain = '[gateway]\nstate = "memory:"\n' + gwkit.toml_upstream("probe", url=upstream.url)
    gw = gwkit.start_gateway("gw-reload", logs, plain)
    method = "com.example/probe/echo"
    try:
        assert gwkit.call(gw.url, method, {}).error["code"] == -32601
        (logs / "gw-reload.toml").write_text(plain + 'methods = ["com.example/probe/echo"]\n')
        os.kill(gw.proc.pid, signal.SIGHUP)

        def answered() -> dict[str, Any] | None:
            return gwkit.call(gw.url, method, {}).body.get("result")

        echoed = eventually(answered, what="the method forwarded after the reload")
        assert echoed["upstream"] == "probe"
        (logs / "gw-reload.toml").write_text(plain)
        os.kill(gw.proc.pid, signal.SIGHUP)
        eventually(
            lambda: gwkit.call(gw.url, method, {}).body.get("error", {}).get("code") == -32601,
            what="the method dropped by the next reload",
        )
    finally:
        gw.stop()
        upstream.stop()


def _front(gw: gwkit.Proc, token: str, era: EraChoice) -> Client:
    return Client(gw.url, era=era, headers={"authorization": f"Bearer {token}"})


@pytest.mark.anyio
@pytest.mark.parametrize("front_era", ["modern", "legacy"])
@pytest.mark.parametrize("upstream", ["modern", "legacy"])
async def test_an_upstreams_custom_notifications_reach_the_caller_they_belong_to(
    gateway: tuple[gwkit.Proc, Path], upstream: str, front_era: EraChoice
) -> None:
    """Notifications the upstream sends on a custom request's stream reach the caller of
    that request through the gateway, each caller its own, while both call at once."""
    gw, _ = gateway
    method = f"com.example/{upstream}/steps"
    got: dict[str, list[dict[str, Any]]] = {"alice": [], "bob": []}
    with anyio.fail_after(60):
        async with _front(gw, ALICE, front_era) as alice, _front(gw, BOB, front_era) as bob:
            alice.on_notification(f"com.example/{upstream}/step", got["alice"].append)
            bob.on_notification(f"com.example/{upstream}/step", got["bob"].append)
            answers: dict[str, dict[str, Any]] = {}

            async def steps(name: str, client: Client, count: int) -> None:
                answers[name] = await client.request(method, {"text": name, "count": count})

            async with anyio.create_task_group() as tg:
                tg.start_soon(steps, "alice", alice, 3)
                tg.start_soon(steps, "bob", bob, 2)
    assert answers["alice"]["steps"] == 3 and answers["bob"]["steps"] == 2
    assert got["alice"] == [{"n": n, "text": "alice"} for n in range(3)]
    assert got["bob"] == [{"n": n, "text": "bob"} for n in range(2)]
