"""Upstream health: a stdio upstream that dies is restarted; an upstream that is down
gets a clear error while the others keep serving; /healthz tells which is which."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import gwkit
import httpx
import pytest
from gwkit import call_tool

from support.waits import eventually


@pytest.fixture(scope="module")
def upstreams(log_dir: Path, stack: list[gwkit.Proc]) -> dict[str, gwkit.Proc]:
    web, steady = gwkit.start_upstreams(log_dir, ("web",), ("steady",))
    stack.extend([web, steady])
    return {"web": web, "steady": steady}


@pytest.fixture(scope="module")
def gateway(upstreams: dict[str, gwkit.Proc], log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    config = (
        '[gateway]\nstate = "memory:"\n'
        + gwkit.toml_upstream(
            "st",
            command=gwkit.serve_command(gwkit.ECHO),
            prefix="st_",
            env={"ECHO_NAME": "st"},
            health_interval=0.5,
        )
        + gwkit.toml_upstream("web", url=upstreams["web"].url, prefix="web_", health_interval=0.5)
        + gwkit.toml_upstream("steady", url=upstreams["steady"].url, prefix="steady_")
    )
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


def health(gateway: gwkit.Proc) -> tuple[int, dict[str, str]]:
    response = httpx.get(gateway.base + "/healthz", timeout=5)
    return response.status_code, response.json()["upstreams"]


def pid_of(gateway: gwkit.Proc) -> int | None:
    reply = call_tool(gateway, "st_pid")
    return int(reply.text()) if "result" in reply.body else None


def test_stdio_upstream_that_dies_mid_call_is_restarted(gateway: gwkit.Proc) -> None:
    first = pid_of(gateway)
    assert first is not None
    died = call_tool(gateway, "st_die")
    assert "error" in died.body, died.body
    assert "st" in died.error["message"], died.error
    assert call_tool(gateway, "steady_whoami").text() == "steady"
    second = eventually(lambda: pid_of(gateway), what="the stdio upstream back")
    assert second != first


def test_stdio_upstream_killed_while_idle_is_restarted(gateway: gwkit.Proc) -> None:
    first = eventually(lambda: pid_of(gateway), what="the stdio upstream up")
    os.kill(first, signal.SIGKILL)
    # Noticed without a request failing first: /healthz reports it, then it is back.
    eventually(lambda: health(gateway)[1]["st"] != "up", 10, "st reported down")
    eventually(lambda: health(gateway)[1]["st"] == "up", 15, "st reported up again")
    second = pid_of(gateway)
    assert second is not None and second != first


def test_down_upstream_gets_a_clear_error_while_others_serve(
    gateway: gwkit.Proc, upstreams: dict[str, gwkit.Proc]
) -> None:
    web = upstreams["web"]
    assert call_tool(gateway, "web_whoami").text() == "web"
    web.kill()
    try:
        down = call_tool(gateway, "web_whoami")
        assert "error" in down.body, down.body
        assert down.status == 503, down.body
        message = down.error["message"]
        assert "Upstream 'web' is unavailable" in message, message
        # The others keep serving: calls, and listings without web's tools.
        assert call_tool(gateway, "steady_whoami").text() == "steady"
        tools = [t["name"] for t in gwkit.call(gateway.url, "tools/list").result["tools"]]
        assert "steady_whoami" in tools and "st_whoami" in tools
        assert not any(t.startswith("web_") for t in tools)
        status, states = eventually(
            lambda: (lambda h: h if h[1]["web"] != "up" else None)(health(gateway)),
            10,
            "web reported down",
        )
        assert status == 503 and states["steady"] == "up"
    finally:
        web.restart()
    eventually(lambda: health(gateway)[0] == 200, 20, "web reconnected")
    assert call_tool(gateway, "web_whoami").text() == "web"


def test_upstream_down_error_is_in_the_callers_terms_and_the_detail_in_the_log(
    gateway: gwkit.Proc, upstreams: dict[str, gwkit.Proc]
) -> None:
    """The caller learns which upstream and what to do, with a correlation id; the
    internal URL and the errno are in the gateway's log under that id, not in the answer.
    When the upstream comes back, one line says so."""
    web = upstreams["web"]
    assert call_tool(gateway, "web_whoami").text() == "web"
    web.kill()
    try:
        down = call_tool(gateway, "web_whoami")
        assert down.status == 503, down.body
        error = down.error
        answer = str(down.body)
        for internal in (str(web.port), "127.0.0.1", "http://", "Errno", "refused"):
            assert internal not in answer, (internal, answer)
        assert "web" in error["message"] and "retry" in error["message"].lower(), error
        reference = error["data"]["correlationId"]
        assert reference and reference in error["message"], error

        def logged_with_detail() -> bool:
            lines = [line for line in gateway.tail(400).splitlines() if reference in line]
            return any(str(web.port) in line or "onnect" in line for line in lines)

        eventually(logged_with_detail, 10, "the correlation id with the detail in the log")
        mark = len(gateway.tail(100_000).splitlines())
    finally:
        web.restart()
    eventually(lambda: health(gateway)[1]["web"] == "up", 20, "web reconnected")
    assert call_tool(gateway, "web_whoami").text() == "web"
    since = gateway.tail(100_000).splitlines()[mark:]
    back = [line for line in since if "web" in line and "back" in line]
    assert len(back) == 1, since
