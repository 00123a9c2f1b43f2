"""Naming across upstreams (issue #20): several upstreams on the empty prefix, a name two
of them offer refusing the start, and an MCP App calling its own tool by the name it has
at its upstream, all against real gateway processes over HTTP.

The App is ``examples/app_server.py`` (a dice roller whose ``ui://dice/roller.html`` view
calls ``roll_dice`` and ``roll_history`` back).  A host passes a view's ``tools/call`` on
as the view wrote it, with nothing naming the view, so the tests send exactly that."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import gwkit
import httpx
import pytest

APP = "examples/app_server.py"
DENY_ROLLS = """
[[rule]]
name = "no-rolling"
effect = "deny"
methods = ["tools/call"]
names = ["dice_roll_dice"]
"""


def names(url: str) -> set[str]:
    return {t["name"] for t in gwkit.call(url, "tools/list").result["tools"]}


def test_a_name_two_unprefixed_upstreams_offer_stops_the_start(
    log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    a, b = gwkit.start_upstreams(log_dir, ("a",), ("b",))
    stack.extend([a, b])
    config = gwkit.toml_upstream("a", url=a.url, prefix="") + gwkit.toml_upstream(
        "b", url=b.url, prefix=""
    )
    path = log_dir / "clash.toml"
    path.write_text(config)
    port = gwkit.free_port()
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "gateway", str(path), "--port", str(port)],
        cwd=gwkit.ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "tool 'whoami' is offered by both upstream 'a' and upstream 'b'" in done.stderr


@pytest.fixture(scope="module")
def shared(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    """Two upstreams without a prefix whose names do not clash."""
    a, dice = gwkit.start_upstreams(log_dir, ("a",), ("dice", APP))
    stack.extend([a, dice])
    config = gwkit.toml_upstream("a", url=a.url, prefix="") + gwkit.toml_upstream(
        "dice", url=dice.url, prefix=""
    )
    gw = gwkit.start_gateway("shared", log_dir, config)
    stack.append(gw)
    return gw


def test_unprefixed_upstreams_share_the_front(shared: gwkit.Proc) -> None:
    assert {"whoami", "roll_dice", "roll_history"} <= names(shared.url)
    assert gwkit.call(shared.url, "tools/call", {"name": "whoami"}).text() == "a"
    rolled = gwkit.call(shared.url, "tools/call", {"name": "roll_dice", "arguments": {"count": 3}})
    assert len(gwkit.structured(rolled)["rolls"]) == 3
    view = gwkit.call(shared.url, "resources/read", {"uri": "ui://dice/roller.html"})
    assert "text/html" in view.result["contents"][0]["mimeType"]


@pytest.fixture(scope="module")
def prefixed(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    """The App's upstream and another, each under its prefix, a rule on the App's tool."""
    a, dice = gwkit.start_upstreams(log_dir, ("a",), ("dice", APP))
    stack.extend([a, dice])
    config = (
        gwkit.toml_upstream("a", url=a.url, prefix="a_")
        + gwkit.toml_upstream("dice", url=dice.url, prefix="dice_")
        + DENY_ROLLS
    )
    gw = gwkit.start_gateway("prefixed", log_dir, config)
    stack.append(gw)
    return gw


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_an_app_calls_its_own_tool_by_its_upstream_name(prefixed: gwkit.Proc, era: str) -> None:
    listed = names(prefixed.url)
    assert "dice_roll_history" in listed
    assert "dice_roll_dice" not in listed  # (denied by the rule: not listed either)
    # The host rendered the view it read through the gateway (served by "dice") ...
    view = gwkit.call(prefixed.url, "resources/read", {"uri": "ui://dice/roller.html"})
    assert "roll_history" in view.result["contents"][0]["text"]
    # ... and the view's call comes back as the view wrote it.
    call = {"name": "roll_history", "arguments": {}}
    if era == "modern":
        reply = gwkit.call(prefixed.url, "tools/call", call)
    else:
        session = gwkit.LegacySession(prefixed.url)
        assert session.initialize().status == 200
        reply = session.request("tools/call", call)
        session.close()
    assert "totals" in gwkit.structured(reply)


def test_the_rules_see_the_name_clients_see(prefixed: gwkit.Proc) -> None:
    # A rule on "dice_roll_dice" holds for the App's "roll_dice" too.
    reply = gwkit.call(prefixed.url, "tools/call", {"name": "roll_dice", "arguments": {}})
    assert reply.status == 403
    assert reply.error["code"] == -31003
    assert "dice_roll_dice" in reply.error["message"]


def test_only_app_upstreams_answer_to_their_own_names(prefixed: gwkit.Proc) -> None:
    # "a" serves no App: its tools keep their gateway names only.
    reply = gwkit.call(prefixed.url, "tools/call", {"name": "whoami"})
    assert reply.error["code"] == -32602
    assert gwkit.call(prefixed.url, "tools/call", {"name": "a_whoami"}).text() == "a"


def test_an_app_name_two_upstreams_share_is_refused_naming_both(
    log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    one, two = gwkit.start_upstreams(log_dir, ("one", APP), ("two", APP))
    stack.extend([one, two])
    config = gwkit.toml_upstream("one", url=one.url, prefix="one_") + gwkit.toml_upstream(
        "two", url=two.url, prefix="two_"
    )
    gw = gwkit.start_gateway("two-apps", log_dir, config)
    stack.append(gw)
    reply = gwkit.call(gw.url, "tools/call", {"name": "roll_history"})
    assert reply.error["code"] == -32602
    assert "'one_roll_history' or 'two_roll_history'" in reply.error["message"]


def test_a_reload_that_would_clash_is_rejected_and_the_old_config_kept(
    log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    a, b = gwkit.start_upstreams(log_dir, ("a",), ("b",))
    stack.extend([a, b])
    gw = gwkit.start_gateway(
        "reloaded", log_dir, gwkit.toml_upstream("a", url=a.url, prefix=""), flags=["--watch"]
    )
    stack.append(gw)
    clash = gwkit.toml_upstream("a", url=a.url, prefix="") + gwkit.toml_upstream(
        "b", url=b.url, prefix=""
    )
    (log_dir / "reloaded.toml").write_text(clash)
    deadline = time.monotonic() + 30
    while "reload rejected" not in gw.tail(200):
        assert time.monotonic() < deadline, gw.tail()
        time.sleep(0.1)
    line = next(x for x in gw.tail(200).splitlines() if "reload rejected" in x)
    assert "tool 'whoami' is offered by both upstream 'a' and upstream 'b'" in line
    assert gwkit.call(gw.url, "tools/call", {"name": "whoami"}).text() == "a"
    assert httpx.get(gw.base + "/readyz").json()["upstreams"] == {"a": "up"}
