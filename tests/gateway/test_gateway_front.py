"""The gateway's HTTP front for operations: probes, the per-upstream gauge, CORS,
``--allowed-host``/``--allowed-origin`` and the per-tool answer-size cap on every path.

Real processes: two HTTP upstreams and one stdio upstream behind gateways that differ only
in their ``ready`` rule.  Upstream ``b`` is killed half-way to show what each probe says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gwkit
import httpx
import pytest

from support.waits import eventually

CAP = 2000  # bytes an up_blob answer may have
BROWSER = "https://app.example.com"


def upstream_toml(procs: dict[str, gwkit.Proc]) -> str:
    return (
        gwkit.toml_upstream("a", url=procs["a"].url, prefix="a_", health_interval=0.3)
        + gwkit.toml_upstream("b", url=procs["b"].url, prefix="b_", health_interval=0.3)
        + gwkit.toml_upstream(
            "s", command=gwkit.serve_command(gwkit.ECHO), prefix="s_", env={"ECHO_NAME": "s"}
        )
    )


@pytest.fixture(scope="module")
def upstreams(log_dir: Path, stack: list[gwkit.Proc]) -> dict[str, gwkit.Proc]:
    a, b = gwkit.start_upstreams(log_dir, ("a",), ("b",))
    stack.extend([a, b])
    return {"a": a, "b": b}


@pytest.fixture(scope="module")
def gateways(
    upstreams: dict[str, gwkit.Proc], log_dir: Path, stack: list[gwkit.Proc]
) -> dict[str, gwkit.Proc]:
    caps = f'[result_caps]\n"*_blob" = {CAP}\n'
    out = {}
    for rule, ready in (("all", '"all"'), ("any", '"any"'), ("named", '["a", "s"]')):
        config = (
            f'[gateway]\nstate = "memory:"\nready = {ready}\ncors_origins = ["{BROWSER}"]\n'
            + caps
            + upstream_toml(upstreams)
        )
        flags = ["--allowed-host", "gw.internal.example", "--allowed-origin", "https://ok.example"]
        out[rule] = gwkit.start_gateway(f"gw-{rule}", log_dir, config, flags=flags)
    stack.extend(out.values())
    return out


def gauge(gw: gwkit.Proc) -> dict[str, float]:
    text = httpx.get(gw.base + "/metrics").text
    out = {}
    for line in text.splitlines():
        if line.startswith("mcp_gateway_upstream_up{"):
            label, value = line.rsplit(" ", 1)
            out[label.split('"')[1]] = float(value)
    return out


def blob(gw: gwkit.Proc, tool: str, size: int, **kw: Any) -> gwkit.Reply:
    return gwkit.call(gw.url, "tools/call", {"name": tool, "arguments": {"size": size}}, **kw)


def test_answer_size_cap_on_every_path(gateways: dict[str, gwkit.Proc]) -> None:
    gw = gateways["all"]
    # modern client -> modern HTTP upstream: the fast lane stops reading at the cap
    assert len(blob(gw, "a_blob", CAP // 2).text()) == CAP // 2
    over = blob(gw, "a_blob", CAP * 2)
    assert over.status == 500, over.body
    assert "too large" in over.error["message"] and over.error["data"]["limit"] == CAP
    # stdio upstream: the client path
    assert len(blob(gw, "s_blob", CAP // 2).text()) == CAP // 2
    assert blob(gw, "s_blob", CAP * 2).error["data"]["limit"] == CAP
    # a legacy client: the bridged path
    session = gwkit.LegacySession(gw.url)
    try:
        session.initialize()
        small = session.request("tools/call", {"name": "a_blob", "arguments": {"size": 10}})
        assert small.result["content"][0]["text"] == "x" * 10
        big = session.request("tools/call", {"name": "a_blob", "arguments": {"size": CAP * 2}})
        assert big.error["data"]["limit"] == CAP
    finally:
        session.close()
    # the cap is per tool: other tools keep the (4 MiB) default
    assert gwkit.call(gw.url, "tools/call", {"name": "a_whoami"}).text() == "a"


def test_cors_is_opt_in_per_origin(gateways: dict[str, gwkit.Proc]) -> None:
    gw = gateways["all"]
    preflight = httpx.options(
        gw.url,
        headers={
            "origin": BROWSER,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type, mcp-method",
        },
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == BROWSER
    assert "authorization" in preflight.headers["access-control-allow-headers"]
    reply = gwkit.call(gw.url, "tools/call", {"name": "a_whoami"}, headers={"origin": BROWSER})
    assert reply.text() == "a"
    assert reply.headers["access-control-allow-origin"] == BROWSER
    assert "mcp-session-id" in reply.headers["access-control-expose-headers"]
    # an origin not listed: no CORS headers, and the transport refuses it (403)
    stranger = gwkit.call(gw.url, "tools/list", headers={"origin": "https://evil.example"})
    assert stranger.status == 403
    assert "access-control-allow-origin" not in stranger.headers


def test_allowed_host_and_origin_flags(gateways: dict[str, gwkit.Proc]) -> None:
    gw = gateways["all"]
    behind_lb = gwkit.call(gw.url, "tools/list", headers={"host": "gw.internal.example"})
    assert behind_lb.status == 200, behind_lb.body
    other = gwkit.call(gw.url, "tools/list", headers={"host": "other.example"})
    assert other.status == 403
    allowed = gwkit.call(gw.url, "tools/list", headers={"origin": "https://ok.example"})
    assert allowed.status == 200
    assert "access-control-allow-origin" not in allowed.headers  # accepted, but not CORS


def _verdicts(body: dict[str, Any]) -> dict[str, Any]:
    """A readiness answer with each upstream's state cut to ``up``/``down``."""
    states = {name: str(state).split(":")[0] for name, state in body["upstreams"].items()}
    return {**body, "upstreams": states}


def test_probes_follow_the_ready_rule(
    gateways: dict[str, gwkit.Proc], upstreams: dict[str, gwkit.Proc]
) -> None:
    for gw in gateways.values():
        assert httpx.get(gw.base + "/readyz").status_code == 200
        assert gauge(gw) == {"a": 1.0, "b": 1.0, "s": 1.0}
    upstreams["b"].kill()
    for gw in gateways.values():

        def b_is_down(gw: gwkit.Proc = gw) -> bool:
            return gauge(gw).get("b") == 0.0

        eventually(b_is_down)
        assert gauge(gw)["a"] == 1.0
        live = httpx.get(gw.base + "/livez")
        assert live.status_code == 200  # the process serves: never restart it for upstreams
    expected = {"all": 503, "any": 200, "named": 200}
    for rule, gw in gateways.items():
        ready = httpx.get(gw.base + "/readyz")
        health = httpx.get(gw.base + "/healthz")
        assert ready.status_code == expected[rule], (rule, ready.text)
        assert health.status_code == ready.status_code  # the documented alias
        # (the same verdicts; a down upstream's reason may change between the two reads,
        # e.g. "its listen stream broke" then "cannot connect")
        assert _verdicts(health.json()) == _verdicts(ready.json())
        assert ready.json()["upstreams"]["b"].startswith("down")
        assert ready.json()["upstreams"]["a"] == "up"
    upstreams["b"].restart()
    eventually(lambda: httpx.get(gateways["all"].base + "/readyz").status_code == 200, 30)
    assert gauge(gateways["all"])["b"] == 1.0


def test_operations_endpoints_pass_the_host_and_origin_policy(
    gateways: dict[str, gwkit.Proc],
) -> None:
    """``/metrics`` and the probes refuse a foreign Host or Origin (DNS rebinding) with
    the same 403 as ``/mcp``; the allowed ones still get their answer."""
    gw = gateways["all"]
    for path in ("/metrics", "/livez", "/readyz", "/healthz"):
        evil = httpx.get(gw.base + path, headers={"host": "evil.example"})
        assert evil.status_code == 403, (path, evil.status_code, evil.text[:200])
        foreign = httpx.get(gw.base + path, headers={"origin": "https://evil.example"})
        assert foreign.status_code == 403, (path, foreign.status_code)
        behind_lb = httpx.get(gw.base + path, headers={"host": "gw.internal.example"})
        assert behind_lb.status_code in (200, 503), (path, behind_lb.status_code)
    mcp = gwkit.call(gw.url, "tools/list", headers={"host": "evil.example"})
    assert mcp.status == 403


def test_readiness_tells_no_internal_details(
    gateways: dict[str, gwkit.Proc], upstreams: dict[str, gwkit.Proc]
) -> None:
    """A down upstream is ``down`` on /readyz, without the error text (an internal URL,
    an errno) that the log keeps."""
    upstreams["b"].kill()
    gw = gateways["all"]
    try:
        eventually(lambda: httpx.get(gw.base + "/readyz").status_code == 503, 30)
        body = httpx.get(gw.base + "/readyz").json()
        assert body["upstreams"]["b"] == "down", body
        assert str(upstreams["b"].port) not in httpx.get(gw.base + "/readyz").text
    finally:
        upstreams["b"].restart()
        eventually(lambda: httpx.get(gw.base + "/readyz").status_code == 200, 30)
