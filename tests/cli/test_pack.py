"""``mcpkit pack``: a bundle the official ``@anthropic-ai/mcpb`` CLI validates, that runs
by its manifest's command in a fresh virtualenv with no ``uv``; ``--check`` for CI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

from support.servers import need, run_mcpkit

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.py"

SECRET_SERVER = """\
from mcpkit import Server

server = Server("weather", "2.1.0", description="Forecasts for a city.")
api_key = server.setting("WEATHER_API_KEY", description="Your key for the weather API", secret=True)
units = server.setting("WEATHER_UNITS", description="metric or imperial", default="metric")


@server.tool
def forecast(city: str) -> str:
    \"\"\"Tomorrow's forecast for a city.\"\"\"
    return f"{city}: sunny ({units.value}, key set: {api_key.value is not None})"
"""


@pytest.fixture(scope="module")
def mcpb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The official ``mcpb`` command, installed with npm into a scratch folder."""
    need("npm")
    folder = tmp_path_factory.mktemp("mcpb-cli")
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent", "@anthropic-ai/mcpb"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"npm could not install @anthropic-ai/mcpb: {done.stderr[-500:]}")
    return folder / "node_modules" / ".bin" / "mcpb"


def _unpack(bundle: Path, into: Path) -> dict[str, Any]:
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(into)
    manifest: dict[str, Any] = json.loads((into / "manifest.json").read_text())
    return manifest


def _substitute(text: str, dirname: Path, user_config: dict[str, str]) -> str:
    text = text.replace("${__dirname}", str(dirname))
    for key, value in user_config.items():
        text = text.replace(f"${{user_config.{key}}}", value)
    return text


def _exchange() -> str:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "host", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "from the bundle"}},
        },
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_a_quickstart_bundle_validates_and_runs_by_its_manifest_without_uv(
    mcpb: Path, tmp_path: Path
) -> None:
    out = run_mcpkit("pack", str(QUICKSTART), "-o", str(tmp_path / "dist"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (bundle,) = (tmp_path / "dist").glob("*.mcpb")
    unpacked = tmp_path / "unpacked"
    manifest = _unpack(bundle, unpacked)
    checked = subprocess.run(
        [str(mcpb), "validate", str(unpacked / "manifest.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert manifest["user_config"]["QUICKSTART_GREETING"]["default"] == "Hello"

    # A machine with python3 and nothing else: a fresh venv, no uv, no mcpkit installed.
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(fresh)
    path = os.pathsep.join([str(fresh / "bin"), "/usr/bin", "/bin"])
    assert shutil.which("uv", path=path) is None
    config = manifest["server"]["mcp_config"]
    env = {"PATH": path, "HOME": str(tmp_path)}
    env.update(
        {
            k: _substitute(v, unpacked, {"QUICKSTART_GREETING": "Hi"})
            for k, v in config["env"].items()
        }
    )
    host_folder = tmp_path / "host-cwd"
    host_folder.mkdir()
    ran = subprocess.run(
        [shutil.which(config["command"], path=path) or config["command"]]
        + [_substitute(arg, unpacked, {}) for arg in config["args"]],
        input=_exchange(),
        cwd=host_folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    answers = {m["id"]: m for m in map(json.loads, ran.stdout.splitlines()) if "id" in m}
    assert {t["name"] for t in answers[2]["result"]["tools"]} == {"add", "echo", "greet"}
    assert answers[3]["result"]["content"][0]["text"] == "from the bundle"
    assert not (host_folder / ".mcpkit").exists()  # nothing written where the host started it


def test_settings_become_user_config_with_secrets_marked(tmp_path: Path) -> None:
    (tmp_path / "weather.py").write_text(SECRET_SERVER)
    out = run_mcpkit("pack", "weather.py", "--manifest-only", "-o", "out", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["name"] == "weather" and manifest["version"] == "2.1.0"
    assert manifest["description"] == "Forecasts for a city."
    assert manifest["tools"] == [
        {"name": "forecast", "description": "Tomorrow's forecast for a city."}
    ]
    assert manifest["user_config"] == {
        "WEATHER_API_KEY": {
            "type": "string",
            "title": "WEATHER_API_KEY",
            "description": "Your key for the weather API",
            "required": True,
            "sensitive": True,
        },
        "WEATHER_UNITS": {
            "type": "string",
            "title": "WEATHER_UNITS",
            "description": "metric or imperial",
            "required": False,
            "sensitive": False,
            "default": "metric",
        },
    }
    env = manifest["server"]["mcp_config"]["env"]
    assert env["WEATHER_API_KEY"] == "${user_config.WEATHER_API_KEY}"
    assert env["WEATHER_UNITS"] == "${user_config.WEATHER_UNITS}"


def test_check_fails_with_a_diff_once_the_code_moves_on(tmp_path: Path) -> None:
    shutil.copy(QUICKSTART, tmp_path / "quickstart.py")
    written = run_mcpkit("pack", "quickstart.py", "--manifest-only", "-o", ".", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    fresh = run_mcpkit("pack", "quickstart.py", "--check", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    with (tmp_path / "quickstart.py").open("a") as source:
        source.write('\n\n@server.tool\ndef shout(text: str) -> str:\n    """Upper."""\n')
        source.write("    return text.upper()\n")
    stale = run_mcpkit("pack", "quickstart.py", "--check", cwd=tmp_path)
    assert stale.returncode == 1, stale.stderr
    assert '+      "name": "shout",' in stale.stdout, stale.stdout
    assert "no longer matches the code" in stale.stderr


def test_check_without_a_committed_manifest_says_how_to_make_one(tmp_path: Path) -> None:
    shutil.copy(QUICKSTART, tmp_path / "quickstart.py")
    done = run_mcpkit("pack", "quickstart.py", "--check", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("mcpkit pack: no committed manifest at ")
    assert "--manifest-only" in done.stderr
