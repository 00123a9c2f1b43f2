"""The host against real server processes: ours (mcpkit) and one that is not (the official SDK).

What must hold: clashing tool names are all usable through namespacing; one server crashing
does not disturb another; a denied tool never reaches its server; an "ask" tool runs only
after consent.  Each server records the tools it actually ran in a file, so "never reached
the server" is checked on the server's side, not taken from the host's word.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from hostkit import PEERS, ScriptedPerson, calls, stdio_server

from mcpkit.host import ConsentDecision, Host, HostConfig, Permission, ToolDenied
from support.sdk_venv import sdk_python

pytestmark = pytest.mark.anyio


def text(result: dict[str, object]) -> str:
    content = result.get("content")
    assert isinstance(content, list)
    return " ".join(str(block.get("text")) for block in content if isinstance(block, dict))


@pytest.fixture
def sdk(tmp_path: Path) -> Path:
    return sdk_python()


async def test_clashing_names_are_namespaced_and_all_usable(tmp_path: Path, sdk: Path) -> None:
    config = HostConfig(
        servers=(
            stdio_server("alpha", "alpha.py", tmp_path),
            stdio_server("beta", "beta.py", tmp_path),
            stdio_server("sdk", str(PEERS / "sdk_server.py"), tmp_path, python=sdk),
        ),
        default_permission=Permission.ALLOW,
    )
    async with Host(config) as host:
        assert {n: c.state for n, c in host.servers.items()} == {
            "alpha": "ready",
            "beta": "ready",
            "sdk": "ready",
        }
        names = [t.qualified_name for t in await host.list_tools()]
        assert {"alpha__add", "beta__add", "sdk__add", "sdk__shout"} <= set(names)
        assert len(names) == len(set(names))
        for server in ("alpha", "beta", "sdk"):
            result = await host.call_tool(f"{server}__add", {"a": 2, "b": 3})
            assert text(result) == f"{server}: 5"
        assert text(await host.call_tool("sdk__shout", {"text": "hi"})) == "HI"
    assert calls(tmp_path, "alpha") == ["add"]
    assert calls(tmp_path, "beta") == ["add"]
    assert calls(tmp_path, "sdk") == ["add", "shout"]


async def test_a_crash_does_not_disturb_the_other_servers(tmp_path: Path, sdk: Path) -> None:
    config = HostConfig(
        servers=(
            stdio_server("alpha", "alpha.py", tmp_path),
            stdio_server("beta", "beta.py", tmp_path),
            stdio_server("sdk", str(PEERS / "sdk_server.py"), tmp_path, python=sdk),
        ),
        default_permission=Permission.ALLOW,
    )
    async with Host(config, health_interval=0.5) as host:
        await host.list_tools()
        with pytest.raises(Exception, match="exited"):
            await host.call_tool("alpha__crash")
        # beta answers while alpha is down and restarting
        assert text(await host.call_tool("beta__add", {"a": 1, "b": 1})) == "beta: 2"
        await host.servers["alpha"].wait_ready(20)
        assert host.servers["alpha"].restarts == 1
        assert text(await host.call_tool("alpha__add", {"a": 1, "b": 2})) == "alpha: 3"

        # the server that is not ours, killed from outside while idle: the health check
        # notices, the host restarts it, the others never notice
        client = host.servers["sdk"].client
        assert client is not None
        pid = getattr(client.transport, "pid", None)
        assert isinstance(pid, int)
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(20):
            while host.servers["sdk"].restarts == 0:
                await anyio.sleep(0.05)
        assert text(await host.call_tool("beta__add", {"a": 2, "b": 2})) == "beta: 4"
        await host.servers["sdk"].wait_ready(20)
        assert text(await host.call_tool("sdk__add", {"a": 1, "b": 1})) == "sdk: 2"
        assert host.servers["beta"].restarts == 0
    assert calls(tmp_path, "beta") == ["add", "add"]


@pytest.mark.parametrize("server", ["alpha", "sdk"])
async def test_a_denied_tool_never_reaches_its_server(
    tmp_path: Path, sdk: Path, server: str
) -> None:
    script = "alpha.py" if server == "alpha" else str(PEERS / "sdk_server.py")
    python = sdk if server == "sdk" else None
    cfg = stdio_server(server, script, tmp_path, **({"python": python} if python else {}))
    person = ScriptedPerson(consent=True)
    config = HostConfig(
        servers=(cfg,),
        default_permission=Permission.ALLOW,
        tool_permissions={f"{server}__add": Permission.DENY},
    )
    async with Host(config, interaction=person) as host:
        await host.list_tools()
        for origin in ("model", "app", "user"):
            with pytest.raises(ToolDenied, match=r"denied by policy|only call its own"):
                await host.call_tool(f"{server}__add", {"a": 1, "b": 2}, origin=origin)
        assert person.asked == []  # deny is not a question
        entries = host.audit.for_tool(f"{server}__add")
        assert [e.decision for e in entries] == ["denied"] * 3
    assert "add" not in calls(tmp_path, server)


async def test_an_ask_tool_runs_only_after_consent(tmp_path: Path) -> None:
    answers = iter([False, ConsentDecision(True), ConsentDecision(True, remember=True)])
    person = ScriptedPerson(consent=lambda request: next(answers))
    config = HostConfig(servers=(stdio_server("alpha", "alpha.py", tmp_path),))
    async with Host(config, interaction=person) as host:
        await host.list_tools()
        with pytest.raises(ToolDenied, match="declined"):
            await host.call_tool("alpha__write_note", {"text": "one"})
        assert calls(tmp_path, "alpha") == []
        # the server says the tool is read-only: shown to the person, not trusted
        request = person.asked[0]
        assert request.annotations["readOnlyHint"] is True
        assert (request.server, request.tool, request.origin) == ("alpha", "write_note", "model")
        assert request.arguments == {"text": "one"}

        assert text(await host.call_tool("alpha__write_note", {"text": "two"})) == "saved: two"
        assert calls(tmp_path, "alpha") == ["write_note"]
        await host.call_tool("alpha__write_note", {"text": "three"})  # approved + remembered
        await host.call_tool("alpha__write_note", {"text": "four"})  # not asked again
        assert len(person.asked) == 3
        # a person's own click is their consent; the model's request is not
        await host.call_tool("alpha__echo", {"text": "x"}, origin="user")
        assert len(person.asked) == 3
        decisions = [
            (e.decision, e.by, e.outcome) for e in host.audit.for_tool("alpha__write_note")
        ]
        assert decisions == [
            ("declined", "user", ""),
            ("approved", "user", "ok"),
            ("approved", "user", "ok"),
            ("approved", "remembered", "ok"),
        ]
    assert calls(tmp_path, "alpha") == ["write_note"] * 3 + ["echo"]


async def test_elicitation_progress_resources_and_prompts(tmp_path: Path) -> None:
    person = ScriptedPerson(name="Grace")
    config = HostConfig(
        servers=(
            stdio_server("alpha", "alpha.py", tmp_path),
            stdio_server("beta", "beta.py", tmp_path),
        ),
        default_permission=Permission.ALLOW,
    )
    async with Host(config, interaction=person) as host, host.events() as events:
        await host.list_tools()
        assert text(await host.call_tool("alpha__ask_name")) == "Hello, Grace!"
        assert person.elicited and person.elicited[0][0] == "alpha"
        assert text(await host.call_tool("alpha__slow", {"steps": 3})) == "counted to 3"
        seen = []
        with anyio.move_on_after(1):
            async for kind, data in events:
                if kind == "progress":
                    seen.append(data["progress"])
                    if len(seen) == 3:
                        break
        assert seen == [1, 2, 3]
        resources = await host.list_resources()
        assert ("alpha", "note://alpha/today") in [(s, r["uri"]) for s, r in resources]
        read = await host.read_resource("alpha", "note://alpha/today")
        assert read["contents"][0].get("text") == "Water the plants."
        prompts = await host.list_prompts()
        assert ("alpha", "review") in [(s, p["name"]) for s, p in prompts]
        got = await host.get_prompt("alpha", "review", {"topic": "tea"})
        assert "tea" in str(got["messages"][0]["content"])
        schema = host.tool("alpha__distance").schema  # type: ignore[union-attr]
        assert schema["properties"]["start"]["properties"]["x"] == {"type": "number"}
        assert "$defs" not in schema


async def test_list_changed_refreshes_the_cached_tool_list(tmp_path: Path) -> None:
    config = HostConfig(
        servers=(stdio_server("alpha", "alpha.py", tmp_path),), default_permission=Permission.ALLOW
    )
    async with Host(config) as host, host.events() as events:
        before = {t.qualified_name for t in await host.list_tools()}
        assert "alpha__extra" not in before
        # served from the client's ttl cache: the server is not asked again
        assert {t.qualified_name for t in await host.list_tools()} == before
        await host.call_tool("alpha__grow")
        with anyio.fail_after(10):
            async for kind, data in events:
                if kind == "changed" and data["kind"] == "tools":
                    assert data["server"] == "alpha"
                    break
        after = {t.qualified_name for t in await host.list_tools()}
        assert after == before | {"alpha__extra"}
        assert text(await host.call_tool("alpha__extra")) == "extra"


async def test_no_warning_for_a_capability_the_server_did_not_declare(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A server declaring ``tools`` only (and answering anything else with -32601) is not
    asked for prompts or resources, so nothing is logged for what it never offered."""
    config = HostConfig(servers=(stdio_server("bare", "bare.py", tmp_path),))
    async with Host(config) as host:
        assert host.servers["bare"].state == "ready"
        with caplog.at_level("WARNING", logger="mcpkit"):
            assert await host.list_prompts() == []
            assert await host.list_resources() == []
            assert await host.list_resource_templates() == []
            assert [t.qualified_name for t in await host.list_tools()] == ["bare__hello"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []
