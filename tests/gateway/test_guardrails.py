"""Guardrails (``[[guardrail]]``) over real HTTP: a ``mcpkit gateway`` process in front of
the same upstream twice, once over HTTP (2026-07-28: calls take the fast lane) and once
over stdio (the client path), plus a 2025-11-25 front client (the bridged path).  Each
path must hide the poisoned tool, redact the secrets and let the user guardrail refuse.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import gwkit
import httpx
import pytest

from mcpkit.gateway.config import ConfigError, parse_config
from support.waits import eventually

GUARDED = "tests/gateway/servers/guarded.py"
API_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c"  # what servers/guarded.py leaks
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
USER_GUARDS = '''
from mcpkit.server.middleware.guardrails import Guardrail


class NoDeletes(Guardrail):
    """Refuses every tool whose name ends in delete_all, with the code it is given."""

    def __init__(self, code: int) -> None:
        self.code = code

    async def check_request(self, ctx):
        if ctx.method == "tools/call" and str(ctx.params.get("name")).endswith("delete_all"):
            self.refuse("deleting everything is not allowed through this gateway")
'''
GUARDRAILS = """
[[guardrail]]
kind = "tool_poisoning"
action = "{action}"

[[guardrail]]
name = "secrets"
kind = "redact_secrets"
patterns = ['sk-live-[A-Za-z0-9]{{16,}}', 'AKIA[0-9A-Z]{{16}}']

[[guardrail]]
class = "user_guards:NoDeletes"
code = -32077
"""
BOTH = ("fast", "slow")


@pytest.fixture(scope="module")
def upstream(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    p = gwkit.start_upstream("guarded", log_dir, GUARDED, "--no-legacy")
    stack.append(p)
    return p


def start(name: str, action: str, upstream: gwkit.Proc, log_dir: Path) -> gwkit.Proc:
    (log_dir / "user_guards.py").write_text(USER_GUARDS)  # next to the config: importable
    config = (
        f'[gateway]\nstate = "memory:"\naudit_log = "{log_dir / (name + "-audit.jsonl")}"\n'
        + gwkit.toml_upstream("fast", url=upstream.url, prefix="fast_")
        + gwkit.toml_upstream("slow", command=gwkit.serve_command(GUARDED), prefix="slow_")
        + GUARDRAILS.format(action=action)
    )
    return gwkit.start_gateway(name, log_dir, config)


@pytest.fixture(scope="module")
def gateway(upstream: gwkit.Proc, log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    gw = start("hiding", "hide", upstream, log_dir)
    stack.append(gw)
    return gw


@pytest.fixture(scope="module")
def flagging(upstream: gwkit.Proc, log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    gw = start("flagging", "flag", upstream, log_dir)
    stack.append(gw)
    return gw


def tool(gw: gwkit.Proc, name: str, arguments: dict[str, Any] | None = None) -> gwkit.Reply:
    return gwkit.call(gw.url, "tools/call", {"name": name, "arguments": arguments or {}})


def test_a_poisoned_tool_is_hidden_and_cannot_be_called(gateway: gwkit.Proc) -> None:
    names = {t["name"] for t in gwkit.call(gateway.url, "tools/list").result["tools"]}
    assert {"fast_search", "slow_search", "fast_config_dump"} <= names
    assert not names & {"fast_add", "slow_add"}
    for name in ("fast_add", "slow_add"):  # also for a client that never listed
        error = tool(gateway, name, {"a": 1, "b": 2}).error
        assert error["code"] == -31030
        assert f"Tool {name} is hidden by guardrail 'tool_poisoning'" in error["message"]
        assert "instruction-like text" in error["message"]
        assert error["data"] == {"guardrail": "tool_poisoning", "name": name}


def test_a_poisoned_tool_is_flagged_and_still_served(flagging: gwkit.Proc) -> None:
    tools = {t["name"]: t for t in gwkit.call(flagging.url, "tools/list").result["tools"]}
    notes = tools["fast_add"]["_meta"]["io.mcpkit.gateway/guardrails"]["tool_poisoning"]
    assert notes == ["contains instruction-like text aimed at the model"]
    assert "_meta" not in tools["fast_search"]
    assert tool(flagging, "fast_add", {"a": 1, "b": 2}).text() == "3"


@pytest.mark.parametrize("upstream_name", BOTH)
def test_secrets_arrive_redacted(gateway: gwkit.Proc, upstream_name: str) -> None:
    result = tool(gateway, f"{upstream_name}_config_dump").result
    wire = json.dumps(result)
    assert API_KEY not in wire and AWS_KEY not in wire
    assert result["structuredContent"] == {
        "endpoint": "https://api.example",
        "api_key": "[REDACTED]",
        "aws": ["[REDACTED]", "ok"],
    }
    assert "[REDACTED]" in result["content"][0]["text"]
    assert result["_meta"]["io.mcpkit.gateway/guardrails"]["secrets"] == {"redacted": 4}
    clean = tool(gateway, f"{upstream_name}_search", {"q": "sk-live"}).result
    assert clean["content"][0]["text"] == "results for sk-live"
    assert "io.mcpkit.gateway/guardrails" not in clean.get("_meta", {})


def test_resource_answers_are_redacted(gateway: gwkit.Proc) -> None:
    contents = gwkit.call(gateway.url, "resources/read", {"uri": "config://service"}).result
    (item,) = contents["contents"]
    assert item["uri"] == "config://service"
    assert item["text"] == "endpoint = https://api.example\napi_key = [REDACTED]\n"


def test_a_legacy_client_gets_the_same_guardrails(gateway: gwkit.Proc) -> None:
    session = gwkit.LegacySession(gateway.url)
    try:
        assert session.initialize().status == 200
        names = {t["name"] for t in session.request("tools/list").result["tools"]}
        assert "fast_search" in names and "fast_add" not in names
        dumped = session.request("tools/call", {"name": "fast_config_dump", "arguments": {}})
        assert API_KEY not in json.dumps(dumped.body) and "[REDACTED]" in dumped.text()
        refused = session.request("tools/call", {"name": "fast_delete_all", "arguments": {}})
        assert refused.error["code"] == -32077
    finally:
        session.close()


@pytest.mark.parametrize("upstream_name", BOTH)
def test_a_user_guardrail_refuses_with_its_code(
    gateway: gwkit.Proc, log_dir: Path, upstream_name: str
) -> None:
    error = tool(gateway, f"{upstream_name}_delete_all").error
    assert error["code"] == -32077
    assert error["message"] == "deleting everything is not allowed through this gateway"
    assert error["data"] == {"guardrail": "NoDeletes"}
    assert tool(gateway, f"{upstream_name}_search", {"q": "x"}).text() == "results for x"
    audit = [json.loads(line) for line in (log_dir / "hiding-audit.jsonl").read_text().splitlines()]
    refused = [e for e in audit if e["name"] == f"{upstream_name}_delete_all"]
    assert refused and all(e["outcome"] == "guardrail:NoDeletes" for e in refused)


def config_with(*guardrails: dict[str, Any], base: Path | None = None) -> Any:
    upstream = {"name": "a", "url": "http://127.0.0.1:1/mcp"}
    return parse_config({"upstream": [upstream], "guardrail": list(guardrails)}, base)


@pytest.mark.parametrize(
    ("guardrail", "complaint"),
    [
        (
            {"kind": "redact_secrets", "patterns": ["sk-(["]},
            r"guardrail\[0\] \(redact_secrets\): pattern 'sk-\(\['",
        ),
        ({"kind": "redact_secrets"}, r"guardrail\[0\] \(redact_secrets\): .*patterns"),
        ({"kind": "tool_poisoning", "action": "delete"}, "action must be flag or hide"),
        ({"kind": "antivirus"}, "kind must be one of tool_poisoning, redact_secrets"),
        ({"kind": "tool_poisoning", "class": "x:Y"}, "exactly one of kind or class"),
        ({"class": "no_such_module:Guard"}, "no_such_module:Guard: cannot import it"),
        ({"class": "json:JSONDecoder"}, "is not a mcpkit.server.middleware.guardrails.Guardrail"),
        ({"class": "not a path"}, "must be 'module:ClassName'"),
    ],
)
def test_guardrail_mistakes_are_config_errors(guardrail: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        config_with(guardrail)


def test_user_guardrails_load_from_the_config_folder(tmp_path: Path) -> None:
    (tmp_path / "folder_guards.py").write_text(
        textwrap.dedent(USER_GUARDS).replace("NoDeletes", "Mine")
    )
    config = config_with(
        {"class": "folder_guards:Mine", "name": "mine", "code": -32001}, base=tmp_path
    )
    (guard,) = config.guardrails
    assert (guard.name, guard.code) == ("mine", -32001)
    with pytest.raises(ConfigError, match=r"guardrail\[1\]: another guardrail is named 'mine'"):
        config_with(
            {"class": "folder_guards:Mine", "name": "mine", "code": 1},
            {"kind": "tool_poisoning", "name": "mine"},
            base=tmp_path,
        )
    with pytest.raises(ConfigError, match=r"guardrail\[0\] \(Mine\): .*unexpected keyword"):
        config_with({"class": "folder_guards:Mine", "code": 1, "colour": "red"}, base=tmp_path)


def test_the_security_example_runs_as_shipped(log_dir: Path, stack: list[gwkit.Proc]) -> None:
    """``.venv/bin/mcpkit gateway examples/gateway-security.toml`` from the repository root,
    venv not activated (as docs/gateway-security.md runs it)."""
    launcher = Path(sys.executable).parent / "mcpkit"
    port = gwkit.free_port()
    cmd = [str(launcher), "gateway", "examples/gateway-security.toml", "--port", str(port)]
    gw = gwkit._spawn("security-example", cmd, log_dir, {"PATH": "/usr/bin:/bin"}, port)
    stack.append(gw)
    gwkit.wait_port(gw)
    gwkit.wait_healthy_gateway(gw, timeout=60)
    names = {t["name"] for t in gwkit.call(gw.url, "tools/list").result["tools"]}
    assert {"untrusted_service_status", "untrusted_drop_table", "demo_echo"} <= names
    assert "untrusted_weather" not in names
    status = gwkit.structured(tool(gw, "untrusted_service_status"))
    assert status == {"status": "ok", "debug": "connected with key [REDACTED]"}
    refused = tool(gw, "untrusted_drop_table", {"table": "users"}).error
    assert refused["code"] == -32050 and "read-only" in refused["message"]
    assert tool(gw, "demo_echo", {"text": "hi"}).text() == "hi"
    gw.stop()


def test_a_reload_swaps_guardrails_and_a_broken_one_keeps_the_old(
    upstream: gwkit.Proc, log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    head = '[gateway]\nstate = "memory:"\n' + gwkit.toml_upstream(
        "fast", url=upstream.url, prefix="fast_"
    )
    redacting = '[[guardrail]]\nkind = "redact_secrets"\npatterns = ["sk-live-[a-z0-9]+"]\n'
    gw = gwkit.start_gateway("reloading", log_dir, head + redacting)
    stack.append(gw)
    path = log_dir / "reloading.toml"

    def reloads(outcome: str) -> float:
        for line in httpx.get(gw.base + "/metrics").text.splitlines():
            if line.startswith("mcp_gateway_config_reloads_total{"):
                label, value = line.rsplit(" ", 1)
                if label.split('"')[1] == outcome:
                    return float(value)
        return 0.0

    def leaked() -> bool:
        return API_KEY in json.dumps(tool(gw, "fast_config_dump").result)

    assert not leaked()
    path.write_text(head + redacting.replace("[a-z0-9]+", "[a-z0-9+"))  # does not compile
    os.kill(gw.proc.pid, signal.SIGHUP)
    eventually(lambda: reloads("rejected") == 1.0)
    assert not leaked()  # the running guardrails stay
    assert "guardrail[0] (redact_secrets): pattern" in gw.tail(50)
    path.write_text(head)  # no guardrails any more
    os.kill(gw.proc.pid, signal.SIGHUP)
    eventually(lambda: reloads("applied") == 1.0)
    assert leaked()
    gw.stop()
