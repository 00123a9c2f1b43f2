"""``mcpkit publish --dry-run``: server.json from the server, valid against the registry's
published schema (the copy vendored with mcpkit, its source and license noted beside it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema

from support.servers import run_mcpkit

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.py"
SCHEMA = REPO / "src" / "mcpkit" / "cli" / "registry" / "server.schema.json"


def test_server_json_from_the_quickstart_fits_the_registry_schema(tmp_path: Path) -> None:
    bundle = tmp_path / "quickstart-1.0.0.mcpb"
    bundle.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: only its hash is read
    done = run_mcpkit(
        "publish",
        str(QUICKSTART),
        "--dry-run",
        "--name",
        "io.github.example/quickstart",
        "--package",
        "pypi:quickstart-mcp@1.0.0",
        "--bundle",
        str(bundle),
        "--bundle-url",
        "https://example.com/quickstart-1.0.0.mcpb",
        "--remote",
        "https://example.com/mcp",
        "-o",
        "out",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / "out" / "server.json").read_text())
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator(schema).validate(entry)
    assert entry["$schema"] == schema["$id"]
    assert (entry["name"], entry["version"]) == ("io.github.example/quickstart", "1.0.0")
    assert entry["description"] == "A tiny demo: arithmetic, a greeting, a note."
    pypi, mcpb = entry["packages"]
    assert (pypi["registryType"], pypi["identifier"]) == ("pypi", "quickstart-mcp")
    assert mcpb["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert pypi["environmentVariables"] == [
        {
            "name": "QUICKSTART_GREETING",
            "description": "The word greet says before a name",
            "isRequired": False,
            "isSecret": False,
            "default": "Hello",
        }
    ]
    assert entry["remotes"] == [{"type": "streamable-http", "url": "https://example.com/mcp"}]


def test_an_entry_the_schema_refuses_is_not_written(tmp_path: Path) -> None:
    done = run_mcpkit(
        "publish",
        str(QUICKSTART),
        "--dry-run",
        "--name",
        "quickstart",
        "--remote",
        "https://example.com/mcp",
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "name: 'quickstart' does not match" in done.stderr
    assert not (tmp_path / "server.json").exists()


def test_publish_says_what_it_needs(tmp_path: Path) -> None:
    nowhere = run_mcpkit(
        "publish", str(QUICKSTART), "--dry-run", "--name", "io.github.a/b", cwd=tmp_path
    )
    assert nowhere.returncode == 2
    assert nowhere.stderr.startswith("mcpkit publish: say where the server can be had")
    upload = run_mcpkit("publish", str(QUICKSTART), "--name", "io.github.a/b", cwd=tmp_path)
    assert upload.returncode == 2 and "mcp-publisher" in upload.stderr
