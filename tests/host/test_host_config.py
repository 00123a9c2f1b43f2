"""The host's JSON file is strict: a key the host does not know is an error naming its
path, in the file, on the command line and for a server added at run time; every shipped
host file and every config block of the host guide loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcpkit.host.config import ConfigError, load_config, parse_config, parse_server
from support.servers import run_mcpkit

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (
            {"mcpServers": {"files": {"command": "python", "args": ["f.py"], "envFile": ".env"}}},
            "unknown key mcpServers.files.envFile (did you mean 'env'?)",
        ),
        (
            {"mcpServers": {"files": {"command": "python", "permision": "deny"}}},
            "unknown key mcpServers.files.permision (did you mean 'permission'?)",
        ),
        (
            {"mcpServers": {}, "permisions": {"default": "deny"}},
            "unknown key permisions (did you mean 'permissions'?)",
        ),
        (
            {"mcpServers": {}, "permissions": {"defualt": "deny"}},
            "unknown key permissions.defualt (did you mean 'default'?)",
        ),
        (
            {"mcpServers": {"w": {"url": "http://127.0.0.1:9/mcp", "oauth": {"clientID": "x"}}}},
            "unknown key mcpServers.w.oauth.clientID (did you mean 'clientId'?)",
        ),
        (
            {"mcpServers": {}, "model": {"provider": "scripted", "max_token": 10}},
            "unknown key model.max_token",
        ),
    ],
    ids=["envFile", "permision", "permisions", "defualt", "clientID", "max_token"],
)
def test_an_unknown_key_is_refused_with_its_path(data: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert named in str(caught.value)


def test_a_server_added_at_run_time_is_checked_the_same_way() -> None:
    with pytest.raises(ConfigError, match=r"unknown key mcpServers\.w\.header \(did you mean"):
        parse_server("w", {"url": "http://127.0.0.1:9/mcp", "header": {"X": "y"}})


def test_the_host_command_names_the_unknown_key_and_stops(tmp_path: Path) -> None:
    config = tmp_path / "host.json"
    entry = {"command": "python", "args": ["server.py"], "permision": "allow"}
    config.write_text(json.dumps({"mcpServers": {"files": entry}}))
    done = run_mcpkit("host", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "mcpServers.files.permision" in done.stderr and "'permission'" in done.stderr


def test_every_shipped_host_file_loads_strictly() -> None:
    files = sorted((ROOT / "examples").glob("*.json"))
    assert len(files) >= 2
    for file in files:
        load_config(file)


def test_every_config_block_of_the_host_guide_loads_strictly() -> None:
    guide = (ROOT / "docs" / "guides" / "host.md").read_text()
    blocks = re.findall(r"```json\n(.*?)```", guide, re.S)
    assert blocks
    for block in blocks:
        parse_config(json.loads(block))
