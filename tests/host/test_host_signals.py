"""Stopping the host: SIGTERM ends ``mcpkit host --web`` whatever is pending (a question
waiting for the person is declined, the servers are stopped), without a traceback."""

from __future__ import annotations

import functools
import json
import os
import pty
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hostkit import SERVERS, calls, trusted_env, web_host_process

from support.servers import kill_group, spawn
from support.waits import eventually


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_sigterm_ends_the_host_with_an_elicitation_pending(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "alpha": {
                "command": sys.executable,
                "args": [str(SERVERS / "alpha.py")],
                "env": {"HOST_TEST_DIR": str(tmp_path), "SERVER_NAME": "alpha"},
            }
        },
        "permissions": {"default": "allow"},
    }
    with web_host_process(config, tmp_path) as (proc, url):
        base, token = url.split("/?token=")
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})
        eventually(
            lambda: any(s["state"] == "ready" for s in api.get("/api/state").json()["servers"]),
            30,
            "alpha ready",
        )
        answers: list[object] = []

        def call() -> None:  # waits for the form the person never fills in
            try:
                answers.append(
                    api.post("/api/tools/call", json={"name": "alpha__ask_name"}, timeout=60)
                )
            except httpx.HTTPError as exc:
                answers.append(exc)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        eventually(lambda: api.get("/api/state").json()["prompts"], 30, "the elicitation")
        proc.send_signal(signal.SIGTERM)
        eventually(lambda: proc.poll() is not None, 30, "the host to exit on SIGTERM")
        eventually(lambda: _group_gone(proc.pid), 30, "the servers to stop")
        caller.join(30)
        api.close()
    log = (tmp_path / "host.log").read_text(errors="replace")
    assert "Traceback" not in log, log
    assert proc.returncode == 0, log
    assert answers, "the pending call got no answer"


@pytest.mark.parametrize("stdin", ["pipe", "pty"])
def test_ctrl_c_ends_the_terminal_host_with_a_question_pending(tmp_path: Path, stdin: str) -> None:
    """``mcpkit host`` in a terminal, the model's call waiting for the person's yes: Ctrl-C
    (SIGINT to the foreground process group) ends it without waiting for a line on stdin,
    which stays open and silent, and without a traceback; its servers stop too.  Its
    stdin is a pipe, or a terminal (a pty) with the output going to a file."""
    config = tmp_path / "host.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "alpha": {
                        "command": sys.executable,
                        "args": [str(SERVERS / "alpha.py")],
                        "env": {"HOST_TEST_DIR": str(tmp_path)},
                    }
                },
                "permissions": {"default": "ask"},
                "model": {
                    "provider": "scripted",
                    "script": [{"tool_calls": [{"name": "alpha__add", "arguments": {"a": 1}}]}],
                },
            }
        )
    )
    log = tmp_path / "terminal.log"
    env = {**trusted_env(config, tmp_path), "MCPKIT_HOST_SETTINGS": str(tmp_path / "s.json")}
    argv = [sys.executable, "-m", "mcpkit.cli.main", "host", "--config", str(config)]
    if stdin == "pty":
        person, terminal = pty.openpty()
        proc = spawn(argv, log, env=env, stdin=terminal)
        os.close(terminal)
        type_line: Callable[[bytes], object] = functools.partial(os.write, person)
    else:
        proc = spawn(argv, log, env=env, stdin=subprocess.PIPE)
        assert proc.stdin is not None
        type_line = proc.stdin.write
    try:
        eventually(lambda: "alpha: ready" in log.read_text(), 30, "alpha ready")
        type_line(b"add one\n")
        if proc.stdin is not None:
            proc.stdin.flush()
        eventually(lambda: "allow? [y]es once" in log.read_text(), 30, "the consent question")
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends
        eventually(lambda: proc.poll() is not None, 30, "the host to exit on Ctrl-C")
        eventually(lambda: _group_gone(proc.pid), 30, "the servers to stop")
    finally:
        kill_group(proc)
        if stdin == "pty":
            os.close(person)
    output = log.read_text(errors="replace")
    assert "Traceback" not in output, output
    assert proc.returncode == 0, output
    assert calls(tmp_path, "alpha") == []  # the call waiting for a yes never ran
