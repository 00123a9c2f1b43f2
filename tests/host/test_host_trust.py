"""Trust before launch: a config's stdio command runs only after the person trusted that
exact launch (command, arguments, environment variable names, working directory); trust is
remembered per user (``MCPKIT_TRUST_FILE`` points the tests at their own file) and reset
with ``mcpkit host --reset-trust``."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from hostkit import SERVERS

from mcpkit.host import ServerConfig, TrustStore, parse_config
from mcpkit.host.trust import trust_key


def test_the_trust_key_is_the_exact_launch_values_included(tmp_path: Path) -> None:
    base = ServerConfig(name="a", command=("python", "s.py"), env={"TOKEN": "one"})
    for changed in (
        dataclasses.replace(base, command=("python", "s.py", "--all")),
        dataclasses.replace(base, env={"TOKEN": "one", "LD_PRELOAD": "x"}),
        dataclasses.replace(base, env={"TOKEN": "two"}),  # a value: another launch
        dataclasses.replace(base, cwd="/tmp"),
    ):
        assert trust_key(changed) != trust_key(base)
    store = TrustStore(tmp_path / "t.json")
    assert store.needs_trust(base)
    store.trust(base)
    assert not store.needs_trust(dataclasses.replace(base, name="b"))  # same launch
    assert not store.needs_trust(ServerConfig(name="h", url="http://127.0.0.1:1/mcp"))
    stored = (tmp_path / "t.json").read_text()
    assert "one" not in json.loads(stored)["launches"].popitem()[1]["launch"]["env"]["TOKEN"]
    assert (tmp_path / "t.json").stat().st_mode & 0o777 == 0o600
    assert store.reset() == 1 and store.needs_trust(base)


def test_inherited_loader_variables_are_part_of_the_launch(tmp_path: Path) -> None:
    config = ServerConfig(name="a", command=("python", "s.py"))
    plain = {"PATH": os.environ["PATH"]}
    loaded = {**plain, "NODE_OPTIONS": "--require /tmp/evil.js"}
    assert trust_key(config, environ=plain) != trust_key(config, environ=loaded)
    store = TrustStore(tmp_path / "t.json", environ=plain)
    store.trust(config)
    again = TrustStore(tmp_path / "t.json", environ=loaded)
    assert again.needs_trust(config)
    assert again.changes(config) == ["environment variable NODE_OPTIONS: new"]


def test_a_bare_name_is_keyed_as_the_program_path_finds(tmp_path: Path) -> None:
    """The resolved executable: the same ``tool`` name found in another folder of PATH is
    another program."""
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "tool").write_text(f"#!/bin/sh\necho {folder}\n")
        (tmp_path / folder / "tool").chmod(0o755)
    config = ServerConfig(name="t", command=("tool",))
    first = TrustStore(tmp_path / "t.json", environ={"PATH": str(tmp_path / "one")})
    first.trust(config)
    second = TrustStore(tmp_path / "t.json", environ={"PATH": str(tmp_path / "two")})
    assert second.needs_trust(config)
    assert f"executable: {tmp_path / 'one' / 'tool'} -> {tmp_path / 'two' / 'tool'}" in (
        second.changes(config)
    )


def test_one_interpreter_spelled_three_ways_is_one_trust(tmp_path: Path) -> None:
    """A venv's python, python3 and python3.X are one file: trusting the launch under one
    spelling trusts it under the others, but never a python that is another file."""
    venv, other = tmp_path / "venv" / "bin", tmp_path / "other" / "bin"
    venv.mkdir(parents=True)
    other.mkdir(parents=True)
    (venv / "python").write_text("#!/bin/sh\n")
    (venv / "python3").symlink_to("python")
    (venv / "python3.11").symlink_to("python3")
    (other / "python").write_text("#!/bin/sh\n")
    (other / "python3").write_text("#!/bin/sh\n")  # a different file from other/python

    def launch(program: Path | str) -> ServerConfig:
        return ServerConfig(name="s", command=(str(program), "server.py"))

    store = TrustStore(tmp_path / "t.json")
    store.trust(launch(venv / "python3"))
    assert not store.needs_trust(launch(venv / "python"))
    assert not store.needs_trust(launch(venv / "python3.11"))
    assert store.needs_trust(launch(other / "python"))
    assert trust_key(launch(other / "python3")) != trust_key(launch(other / "python"))


def host(config: Path, env: dict[str, str], typed: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "mcpkit.cli.main", "host", "--config", str(config)],
        input=typed,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_terminal_asks_before_it_runs_a_command(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "beta": {
                        "command": sys.executable,
                        "args": [str(SERVERS / "beta.py")],
                        "env": {"SERVER_NAME": "beta"},
                    }
                }
            }
        )
    )
    env = {**os.environ, "MCPKIT_TRUST_FILE": str(tmp_path / "trust.json")}
    refused = host(config, env, "n\n/servers\n/quit\n")
    assert "! beta wants to run a command on this machine" in refused
    assert f"{sys.executable} {SERVERS / 'beta.py'}" in refused
    assert "environment variables: SERVER_NAME" in refused
    assert "beta: not started (untrusted)" in refused
    assert "untrusted" in refused.split("you> ")[1]  # /servers
    assert not (tmp_path / "trust.json").exists()

    trusted = host(config, env, "y\n/tools\n/quit\n")
    assert "beta__weather" in trusted
    again = host(config, env, "/tools\n/quit\n")  # remembered: no question
    assert "wants to run" not in again and "beta__weather" in again

    reset = subprocess.run(
        [sys.executable, "-m", "mcpkit.cli.main", "host", "--reset-trust"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert "forgot 1 trusted server command(s)" in reset.stdout
    assert "wants to run" in host(config, env, "\n/quit\n")  # Enter is "no"
    stored = parse_config(json.loads(config.read_text())).servers[0]
    assert TrustStore(tmp_path / "trust.json").needs_trust(stored)


def _server_folder(root: Path, greeting: str) -> Path:
    """A folder holding ``server.py``: the beta test server, with one line to tell it apart."""
    folder = root
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "server.py").write_text((SERVERS / "beta.py").read_text() + f"\n# {greeting}\n")
    return folder


def host_in(folder: Path, config: Path, env: dict[str, str], typed: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "mcpkit.cli.main", "host", "--config", str(config)],
        input=typed,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=folder,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_a_same_named_script_elsewhere_or_changed_asks_again(tmp_path: Path) -> None:
    """Trusting ``python server.py`` in one folder does not trust the ``server.py`` of
    another folder, nor the same file once its content changed; each question says what
    changed."""
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"beta": {"command": sys.executable, "args": ["server.py"]}}})
    )
    env = {**os.environ, "MCPKIT_TRUST_FILE": str(tmp_path / "trust.json")}
    repo = _server_folder(tmp_path / "repo", "the one I read")
    other = _server_folder(tmp_path / "other", "someone else's")

    first = host_in(repo, config, env, "y\n/tools\n/quit\n")
    assert "wants to run a command" in first and "beta__weather" in first
    assert "wants to run" not in host_in(repo, config, env, "/quit\n")  # remembered

    elsewhere = host_in(other, config, env, "n\n/quit\n")
    assert "! beta wants to run a command on this machine" in elsewhere
    assert f"working directory: {repo} -> {other}" in elsewhere
    assert "beta: not started (untrusted)" in elsewhere

    with (repo / "server.py").open("a") as script:
        script.write("# one more line\n")
    changed = host_in(repo, config, env, "n\n/quit\n")
    assert "! beta wants to run a command on this machine" in changed
    assert f"script {repo / 'server.py'}: content changed" in changed
    assert "beta: not started (untrusted)" in changed
