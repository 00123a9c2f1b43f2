"""Stopping the host: SIGTERM ends ``mcpkit host --web`` whatever is pending (a question
waiting for the person is declined, the servers are stopped), without a traceback."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import httpx
from hostkit import SERVERS, web_host_process

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
