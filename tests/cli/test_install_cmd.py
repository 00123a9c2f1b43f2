"""``mcpkit install``: real config files under a temporary HOME, merged, never clobbered,
and the entry it writes really starts the server (launched here as the host would)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
QUICKSTART = HERE.parent.parent / "examples" / "quickstart.py"

#: client -> (config file under HOME on Linux, key that holds the servers, typed entry)
WHERE = {
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers", False),
    "claude-code": (".claude.json", "mcpServers", True),
    "cursor": (".cursor/mcp.json", "mcpServers", False),
    "vscode": (".config/Code/User/mcp.json", "servers", True),
    "gemini-cli": (".gemini/settings.json", "mcpServers", False),
}


def install(home: Path, *args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "APPDATA")}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", "install", *args],
        cwd=cwd,
        env=env,
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.skipif(sys.platform != "linux", reason="the Linux locations are asserted")
@pytest.mark.parametrize("client", sorted(WHERE))
def test_each_client_gets_an_entry_at_its_real_location(tmp_path: Path, client: str) -> None:
    relative, key, typed = WHERE[client]
    path = tmp_path / relative
    out = install(tmp_path, client, str(QUICKSTART), "--env", "GREETING=hi")
    assert out.returncode == 0, out.stderr
    entry = json.loads(path.read_text())[key]["quickstart"]
    assert entry["command"] == str(Path(sys.executable).absolute())
    assert Path(entry["command"]).is_absolute()
    assert entry["args"] == ["-m", "mcpkit", "serve", str(QUICKSTART.resolve())]
    assert entry["env"] == {"GREETING": "hi"}
    assert ("type" in entry) == typed


def test_merging_keeps_other_entries_and_settings_and_backs_up(tmp_path: Path) -> None:
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    before: dict[str, Any] = {
        "theme": "dark",
        "mcpServers": {"other": {"command": "npx", "args": ["x"]}},
    }
    path.write_text(json.dumps(before))
    out = install(tmp_path, "cursor", str(QUICKSTART), "--name", "demo")
    assert out.returncode == 0, out.stderr
    after = json.loads(path.read_text())
    assert after["theme"] == "dark"
    assert after["mcpServers"]["other"] == before["mcpServers"]["other"]
    assert set(after["mcpServers"]) == {"other", "demo"}
    assert json.loads((path.parent / "mcp.json.bak").read_text()) == before
    again = install(tmp_path, "cursor", str(QUICKSTART), "--name", "demo")
    assert again.returncode == 0 and "replaced 'demo'" in again.stderr
    assert set(json.loads(path.read_text())["mcpServers"]) == {"other", "demo"}


@pytest.mark.parametrize("content", ['{"mcpServers": {', "[1, 2]", '{"mcpServers": []}'])
def test_a_config_it_cannot_merge_is_refused_untouched(tmp_path: Path, content: str) -> None:
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    out = install(tmp_path, "gemini-cli", str(QUICKSTART))
    assert out.returncode == 2 and "nothing was written" in out.stderr, out.stderr
    assert path.read_text() == content
    assert not (path.parent / "settings.json.bak").exists() or content.startswith("{")
    assert "Traceback" not in out.stderr


def test_env_file_and_explicit_config_path(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text('# comment\nAPI_KEY=secret\nQUOTED="a b"\n')
    target = tmp_path / "custom" / "claude.json"
    out = install(
        tmp_path,
        "claude-desktop",
        f"{QUICKSTART}:server",
        "--env-file",
        str(env_file),
        "--env",
        "QUOTED=override",
        "--config-path",
        str(target),
    )
    assert out.returncode == 0, out.stderr
    entry = json.loads(target.read_text())["mcpServers"]["quickstart"]
    assert entry["env"] == {"API_KEY": "secret", "QUOTED": "override"}
    assert entry["args"][-1] == f"{QUICKSTART.resolve()}:server"


def test_a_new_config_is_private_and_an_existing_one_keeps_its_mode(tmp_path: Path) -> None:
    """The entry's ``env`` holds secrets: a file install creates is 0600 whatever the
    umask; a file that was there keeps the mode its owner gave it."""
    fresh, shared = tmp_path / "new" / "mcp.json", tmp_path / "old" / "mcp.json"
    shared.parent.mkdir()
    shared.write_text("{}")
    shared.chmod(0o640)
    previous = os.umask(0o022)  # the usual umask: files 0644 unless told otherwise
    try:
        for path in (fresh, shared):
            args = ("--env", "API_KEY=secret", "--config-path", str(path))
            out = install(tmp_path, "cursor", str(QUICKSTART), *args)
            assert out.returncode == 0, out.stderr
    finally:
        os.umask(previous)
    assert json.loads(fresh.read_text())["mcpServers"]["quickstart"]["env"]["API_KEY"]
    assert oct(fresh.stat().st_mode & 0o777) == oct(0o600)
    assert oct(shared.stat().st_mode & 0o777) == oct(0o640)


def test_with_installs_into_the_launching_interpreter(tmp_path: Path) -> None:
    """``--with PKG`` runs pip with the interpreter the entry launches (here a package that
    is already there, so pip only checks it: no network needed)."""
    out = install(tmp_path, "json", str(QUICKSTART), "--with", "anyio")
    assert out.returncode == 0, out.stderr
    assert f"pip install anyio (into {sys.executable})" in out.stderr
    out = install(tmp_path, "json", str(QUICKSTART), "--with", "/nonexistent/pkg.whl")
    assert out.returncode == 2 and "--with /nonexistent/pkg.whl: pip install failed" in out.stderr


def test_json_prints_the_entry_and_writes_nothing(tmp_path: Path) -> None:
    out = install(tmp_path, "json", str(QUICKSTART), "--name", "qs")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert printed["mcpServers"]["qs"]["args"][-1] == str(QUICKSTART.resolve())
    assert not any(tmp_path.iterdir())


def test_a_module_target_gets_its_folder_on_pythonpath(tmp_path: Path) -> None:
    (tmp_path / "mymod.py").write_text(QUICKSTART.read_text())
    out = install(tmp_path, "json", "mymod:server", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    entry = json.loads(out.stdout)["mcpServers"]["quickstart"]
    assert entry["args"][-1] == "mymod:server" and entry["env"]["PYTHONPATH"] == str(tmp_path)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["claude-desktop", "missing.py"], "no such file: missing.py"),
        (["cursor", "no_such_module_xyz:server"], "cannot find module 'no_such_module_xyz'"),
        (["cursor", "QUICK", "--env", "NOEQUALS"], "--env 'NOEQUALS': expected KEY=VALUE"),
        (["cursor", "QUICK", "--env-file", "nope.env"], "--env-file nope.env: no such file"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, args: list[str], says: str) -> None:
    args = [str(QUICKSTART) if a == "QUICK" else a for a in args]
    out = install(tmp_path, *args)
    assert out.returncode == 2 and says in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / ".cursor").exists()


def test_the_written_entry_starts_the_server_without_path(tmp_path: Path) -> None:
    """Launch the entry as a desktop host would: its command and args, its env, an
    empty PATH and another working directory, and talk MCP to it."""
    out = install(tmp_path, "claude-desktop", str(QUICKSTART), "--env", "X=1")
    assert out.returncode == 0, out.stderr
    entry = json.loads((tmp_path / WHERE["claude-desktop"][0]).read_text())["mcpServers"][
        "quickstart"
    ]
    discover = (
        b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":'
        b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}\n'
    )
    done = subprocess.run(
        [entry["command"], *entry["args"]],
        input=discover,
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
        env={"PATH": "", "HOME": str(tmp_path), **entry["env"]},
    )
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "quickstart"
