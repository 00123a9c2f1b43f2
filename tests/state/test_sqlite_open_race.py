"""Processes that open one fresh SQLite state file at the same moment all start.

Replicas of one server started together on one machine (``mcpkit serve --http``
processes) open the same ``state.db`` in its per-user data folder, which each may be the
first to create; switching a fresh file to WAL then races, and
SQLite answers the loser "database is locked" at once (no busy wait).  Before the retry in
``state/sqlite.py`` some of the openers below died with that error (5 of 80 in a trial run).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

OPENER = """
import os, sys, time
go, path = sys.argv[1], sys.argv[2]
from mcpkit.state.sqlite import SQLiteBackend
while not os.path.exists(go):
    time.sleep(0.0005)
backend = SQLiteBackend(path)
assert backend._wal is not None, "not in WAL mode"
"""


def test_openers_racing_on_a_fresh_file_all_start(tmp_path: Path) -> None:
    script = tmp_path / "opener.py"
    script.write_text(OPENER, encoding="utf-8")
    for trial in range(4):
        folder = tmp_path / f"trial{trial}"
        folder.mkdir()
        go, db = folder / "go", folder / ".mcpkit" / "state.db"
        openers = [
            subprocess.Popen(
                [sys.executable, str(script), str(go), str(db)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(8)
        ]
        time.sleep(0.5)  # every opener imported and waiting (a late one only races less)
        go.touch()
        for opener in openers:
            _, err = opener.communicate(timeout=60)
            assert opener.returncode == 0, err[-2000:]
