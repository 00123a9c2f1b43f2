"""Where a server keeps its state, as a user runs it: an HTTP server in the per-user data
directory keyed by its name, readable by its user alone (the directories 0700, the
database and its ``-wal``/``-shm`` files 0600); a stdio server and the client commands in
memory, so nothing is left in the folder they ran in and an unwritable folder is no
matter; an unusable location is one line, never a traceback; a sealing key file other
users could read is refused.  Real processes, HOME and XDG_DATA_HOME under ``tmp_path``."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpkit import Server
from support.servers import free_port, kill_group, run_mcpkit, spawn, tail, wait_http

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.py"
#: A folder nobody may create anything in, root included.
UNWRITABLE = Path("/proc")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux paths and modes")


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private HOME and XDG_DATA_HOME for this test and the processes it starts, under
    the usual umask (files 0644 unless the code asks otherwise)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    previous = os.umask(0o022)
    try:
        yield tmp_path / "data"
    finally:
        os.umask(previous)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


@contextlib.contextmanager
def serve_http(work: Path, *args: str) -> Iterator[tuple[str, Path]]:
    """``mcpkit serve QUICKSTART --http`` run in ``work``; (its URL, its log)."""
    port = free_port()
    log = work.parent / f"serve-{port}.log"
    argv = [sys.executable, "-m", "mcpkit", "serve", str(QUICKSTART), "--http", "--port"]
    process = spawn([*argv, str(port), *args], log, cwd=work)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_http(url, process, log)
        yield url, log
    finally:
        kill_group(process)


def test_an_http_server_keeps_its_state_in_the_user_data_dir_privately(
    data_home: Path, work: Path
) -> None:
    with serve_http(work) as (url, _):
        listed = run_mcpkit("call", url, "echo", "text=hi", cwd=work)
        assert (listed.returncode, listed.stdout) == (0, "hi\n"), listed.stderr
        folder = data_home / "mcpkit" / "servers" / "quickstart"
        database = folder / "state.db"
        assert database.exists()
        for directory in (data_home, data_home / "mcpkit", data_home / "mcpkit" / "servers"):
            assert mode(directory) == "0o700", directory
        assert mode(folder) == "0o700"
        files = [database, folder / "state.db-wal", folder / "state.db-shm"]
        assert {f.name: mode(f) for f in files} == {f.name: "0o600" for f in files}
    assert not (work / ".mcpkit").exists()


def test_an_unusable_default_location_is_one_warning_then_memory(
    data_home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(UNWRITABLE / "mcpkit-data"))
    with serve_http(work) as (url, log):
        called = run_mcpkit("call", url, "echo", "text=hi", cwd=work)
        assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
        text = tail(log)
        warnings = [line for line in text.splitlines() if "keeping state in memory" in line]
        assert len(warnings) == 1, text
        assert "/proc/mcpkit-data/mcpkit/servers/quickstart" in warnings[0]
        assert "Traceback" not in text


def test_an_unusable_state_url_given_is_one_line_and_exit_2(data_home: Path, work: Path) -> None:
    done = run_mcpkit(
        "serve", str(QUICKSTART), "--http", "--state", "sqlite:////proc/mcpkit/state.db", cwd=work
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("mcpkit serve: cannot use the state database /proc/mcpkit/")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_stdio_server_in_an_unwritable_folder_serves(data_home: Path) -> None:
    done = run_mcpkit("call", str(QUICKSTART), "add", "a=1", "b=2", "--json", cwd=UNWRITABLE)
    assert done.returncode == 0, done.stderr
    assert '"sum": 3' in done.stdout
    assert "Traceback" not in done.stderr


def test_client_commands_leave_nothing_behind(data_home: Path, work: Path) -> None:
    for args in (("list", str(QUICKSTART)), ("call", str(QUICKSTART), "echo", "text=x")):
        done = run_mcpkit(*args, cwd=work)
        assert done.returncode == 0, done.stderr
    assert list(work.iterdir()) == []  # no .mcpkit/ where they ran
    assert not data_home.exists()  # nor a state database they did not need


def key_file(data_home: Path, name: str) -> Path:
    folder = data_home / "mcpkit" / "servers" / name
    folder.mkdir(parents=True)
    path = folder / "sealing.key"
    path.write_text("a-secret-others-could-read\n")
    return path


def test_a_sealing_key_file_others_can_read_is_refused(
    data_home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPKIT_SEALING_KEYS", raising=False)  # the file is what is asked
    path = key_file(data_home, "quickstart")
    path.chmod(0o644)
    done = run_mcpkit("serve", str(QUICKSTART), cwd=work)
    assert done.returncode == 2, done.stderr
    assert f"refusing the sealing key file {path}" in done.stderr
    assert "group or others can read or write it" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    path.chmod(0o600)
    assert Server("quickstart").keyring.primary_id  # the same file, private: used


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_sealing_key_file_of_another_user_is_refused(
    data_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPKIT_SEALING_KEYS", raising=False)
    path = key_file(data_home, "shared")
    path.chmod(0o600)
    os.chown(path, 65534, 65534)  # nobody
    with pytest.raises(PermissionError, match="belongs to uid 65534"):
        _ = Server("shared").keyring


def test_server_run_with_an_unusable_state_exits_with_one_line(work: Path) -> None:
    script = work / "demo.py"
    script.write_text(
        "from mcpkit import Server\n"
        "server = Server('demo', state='sqlite:////proc/mcpkit/state.db')\n"
        "server.run()\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("demo: cannot use the state database /proc/mcpkit/state.db")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
