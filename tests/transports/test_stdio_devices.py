"""``mcpkit serve`` over stdio when stdout is not a pipe: /dev/null and a terminal.

Event-loop pipe transports are for pipes and sockets; on character devices uvloop
aborted the process (``> /dev/null``) or lost the answer (a terminal, input ended at
once).  Both must exit cleanly, the terminal showing the answer.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from support.mcp import initialize_request

SERVER = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"
INIT = json.dumps(initialize_request(1)).encode() + b"\n"
COMMAND = [sys.executable, "-m", "mcpkit", "serve", str(SERVER)]


def test_stdout_to_dev_null_exits_cleanly(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(INIT)
    with requests.open("rb") as stdin:
        done = subprocess.run(
            COMMAND, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]


def test_stdout_to_a_terminal_shows_the_answer(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(INIT)
    master, slave = pty.openpty()
    try:
        with requests.open("rb") as stdin:
            proc = subprocess.Popen(COMMAND, stdin=stdin, stdout=slave, stderr=subprocess.DEVNULL)
        os.close(slave)
        output = b""
        deadline = time.monotonic() + 60
        while b'"serverInfo"' not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal's other side closed
                    break
                if not chunk:
                    break
                output += chunk
        assert proc.wait(timeout=60) == 0
        assert b'"serverInfo"' in output, output
    finally:
        os.close(master)
